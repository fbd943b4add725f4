#!/usr/bin/env bash
# Stop the single-machine stack started by deploy/farm-up.sh (only processes it started).
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/mlgo-farm stack down "$@"
