# The two set-up commands of the README:
#   make demo   installs everything into .venv and runs the whole pipeline on a generated demo cluster
#   make test   installs everything (plus the system packages the tests use) and runs the test suite
.PHONY: setup system-deps demo test test-fast lint bench

PY := .venv/bin/python

setup:
	bash scripts/setup.sh

system-deps:
	bash scripts/install-system-deps.sh

demo: setup
	.venv/bin/logdir-gc demo

test: setup system-deps
	$(PY) -m pytest -q -p no:cacheprovider --timeout=900
	.venv/bin/ruff check pipelines jobs tests bench

test-fast: setup
	$(PY) -m pytest -q -m "not slow and not spark and not sftp and not integration"

lint:
	.venv/bin/ruff check pipelines jobs tests bench
