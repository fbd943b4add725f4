#!/usr/bin/env bash
# Start the single-machine stack on loopback (idempotent): redis-server, Celery worker and beat,
# Buildbot master and one local worker. Pid files in var/run, logs in var/log and var/buildbot.
# Settings: mlgo-farm.toml or MLGO_FARM_* variables (ports: MLGO_FARM_BUILDBOT_WWW_PORT, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/mlgo-farm stack up "$@"
