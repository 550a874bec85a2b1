#!/usr/bin/env bash
# Resolve Apache Kafka's jars from Maven Central into .cache/kafka/<version>/lib (cached; second run instant).
# Usage: scripts/kafka_jars.sh [VERSION...]   (default: the 4.x and 3.x releases the integration tests use)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
[ -x "$PY" ] || PY=python3
exec "$PY" tests/kafka_cluster/jars.py "$@"
