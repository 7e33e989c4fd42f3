#!/usr/bin/env bash
# Starts deploy/compose.yaml with podman-compose and checks from outside that its parts cooperate:
# deliveries to two intakes stored once in PostgreSQL, workers ending their jobs, a worker killed mid-job,
# PostgreSQL restarted, `down` leaving nothing. What runs, what is faked and each step: tests/support/compose_check.py.
# --compose-file FILE checks another file (the check fails, before building anything, on a broken one).
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m tests.support.compose_check "$@"
