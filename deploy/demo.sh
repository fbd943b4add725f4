#!/usr/bin/env bash
# The main job on embedded defaults (one machine): filled in as the farm grows.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/mlgo-farm toolchain
