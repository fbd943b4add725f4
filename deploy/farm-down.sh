#!/usr/bin/env bash
# Stop the single-machine stack started by deploy/farm-up.sh: the supervisor first, then only
# processes the stack started.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/mlgo-farm stack down "$@"
