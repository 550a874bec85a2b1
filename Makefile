# The two set-up commands of the README:
#   make demo   installs everything into .venv and runs the whole pipeline on a generated demo cluster
#   make test   installs everything (plus the system packages the tests use) and runs the test suite
#               (all but the second tier: the jobs on a Spark standalone cluster, the KRaft tests on Kafka 3.9.2
#               and the long property/fuzz runs,
#               `make test-second-tier`)
.PHONY: setup system-deps demo test test-second-tier test-fast lint docs bench

PY := .venv/bin/python

setup:
	bash scripts/setup.sh

system-deps:
	bash scripts/install-system-deps.sh

demo: setup
	.venv/bin/logdir-gc demo

test: setup system-deps
	$(PY) -m pytest -q -p no:cacheprovider --timeout=900 --durations=30 -m "not second_tier and not slow"
	.venv/bin/ruff check pipelines jobs tests bench
	.venv/bin/mkdocs build --strict --quiet

test-second-tier: setup system-deps
	$(PY) -m pytest -q -p no:cacheprovider --timeout=1800 -m "second_tier or slow"

test-fast: setup
	$(PY) -m pytest -q -m "not slow and not spark and not sftp and not integration"

docs: setup
	.venv/bin/mkdocs build --strict

lint:
	.venv/bin/ruff check pipelines jobs tests bench
