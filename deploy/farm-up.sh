#!/usr/bin/env bash
# Start the single-machine stack on loopback (idempotent): redis-server (append-only, password in
# var/secrets), Celery worker and beat, Buildbot master and one local worker, and the supervisor that
# starts again whichever of them dies. Pid files in var/run, logs in var/log and var/buildbot.
# Settings: mlgo-farm.toml or MLGO_FARM_* variables (ports: MLGO_FARM_BUILDBOT_WWW_PORT, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/mlgo-farm stack up "$@"
