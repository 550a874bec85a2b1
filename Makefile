# The two set-up commands of the README:
#   make demo   installs everything into .venv and runs the whole pipeline on a generated demo cluster
#   make test   installs everything (plus the system packages the tests use) and runs the test suite
#               (all but the second tier: the jobs on a Spark standalone cluster, the KRaft tests on Kafka 3.9.2
#               and the long property/fuzz runs,
#               `make test-second-tier`)
.PHONY: setup system-deps test-setup demo test test-second-tier test-fast lint docs bench

PY := .venv/bin/python

setup:
	bash scripts/setup.sh

system-deps:
	bash scripts/install-system-deps.sh

demo: setup
	.venv/bin/logdir-gc demo

# The tests' set-up: the system packages (apt) install while the venv, the jars and the class archive are made.
test-setup:
	@bash scripts/install-system-deps.sh & deps=$$!; bash scripts/setup.sh; made=$$?; wait $$deps; \
	  deps_rc=$$?; [ $$made -eq 0 ] && [ $$deps_rc -eq 0 ]

test: test-setup
	$(PY) -m pytest -q -p no:cacheprovider --timeout=900 --durations=30 -m "not second_tier and not slow"
	.venv/bin/ruff check pipelines jobs tests bench
	.venv/bin/mkdocs build --strict --quiet

test-second-tier: test-setup
	$(PY) -m pytest -q -p no:cacheprovider --timeout=1800 -m "second_tier or slow"

test-fast: setup
	$(PY) -m pytest -q -m "not slow and not spark and not sftp and not integration"

docs: setup
	.venv/bin/mkdocs build --strict

lint:
	.venv/bin/ruff check pipelines jobs tests bench
