# Conductor: set-up, development database, tests.
#   make demo        install deps, start the dev database, migrate, run the demo
#   make test        pgTAP (scripts/pgtap.sh) then pytest (test-base), then the
#                    other versions (test-versions); fails if any part fails.
#                    Every tier: each test module is in one of unit (no database),
#                    integration (one server), topology (servers and networks of
#                    its own), browser (Chromium), in python/tests/tiers.py;
#                    pytest -m TIER runs one
#   make test-quick  what a change to the package needs, in under 2 minutes: the
#                    unit tier (with ruff and mypy) and the client, the embedded
#                    worker and the docs (pytest -m quick: 62 s, 73 s with a cold
#                    mypy cache, on 2 shared cores at load 1.6-2.5); no pgTAP,
#                    no other versions
#   make test-versions   the other versions alone (VERSIONS: each one also as
#                    make test-pg18, test-py312-dj60, test-py312-dj61, test-py313-dj61)
#   make bench       bench/run.sh
#   make docs        build the documentation site (mkdocs.yml) into build/site,
#                    after checking docs/reference/sql.md matches the schema
#   make docs-reference  regenerate docs/reference/sql.md from the functions' comments,
#                    docs/reference/configuration.md from the flags and settings, and
#                    sql/schema.dump.sql (the deployed schema) from a fresh deploy
#   make dist        build the wheel and sdist into dist/ (python -m build)
#   make devdb       start the development cluster (.devdb) and migrate it
#   make devdb-stop  stop it
#   make clean       stop the dev cluster, remove it and build/test caches
#   make distclean   clean, and remove .venv and the other versions' venvs
# Every target is safe to run twice.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
VENV := .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=

# The other versions make test runs (issue 27), besides .venv's PostgreSQL 15,
# Python 3.11 and Django 5.2, each in a venv of its own pinned by
# scripts/versions.sh. `make test VERSIONS=` runs none of them; name a subset
# to run only those.
PY_VERSIONS := py312-dj60 py312-dj61 py313-dj61
VERSIONS ?= pg18 $(PY_VERSIONS)
# On PostgreSQL 18 (test-pg18): every pgTAP file, and these pytest files, what
# depends on the server: the engine through the client and the worker, enqueue
# in a transaction, durable runs, the local buffer, the wire format, recovery
# from killed workers and the reaper, wake-ups, schedules and cron_next against
# croniter, upgrades and migrations, devdb, issue 25's locks and isolation, and
# a claim's fencing across a crash (issue 26).
PG18_TESTS := $(addprefix python/tests/,test_client.py test_worker.py test_worker_reports.py \
	test_enqueue_in_transaction.py test_runs.py test_buffer.py test_wire.py test_infinite_times.py \
	test_exclusive.py test_recovery.py test_reaper_schedule.py test_wakeups.py test_scheduler.py \
	test_cron_oracle.py test_upgrade.py test_migrate.py test_migrate_lock.py test_devdb.py \
	test_watch_isolation.py test_foreign_locks.py test_claim_durability.py test_expiry.py)
# On Python 3.12 and 3.13 (test-py*): the package's own tests, what depends on
# the interpreter (unit tests, the client, the embedded worker and its asyncio
# handlers, the async client, durable runs, logging, migrate, traces with and
# without OpenTelemetry), and every Django test. Not the topology, browser,
# wheel or benchmark ones.
PY_TESTS := python/tests/unit $(addprefix python/tests/,test_client.py test_worker.py \
	test_async_handlers.py test_aio.py test_enqueue_in_transaction.py test_runs.py test_logging.py \
	test_migrate.py test_wire.py test_tracing.py test_tracing_optional.py)
DJANGO_TESTS := $(sort $(wildcard python/tests/test_django_*.py))

.PHONY: all deps deps-demo devdb migrate demo test test-quick test-base pgtap pytest test-versions test-pg18 test-pythons \
	$(PY_VERSIONS:%=test-%) bench docs docs-reference dist devdb-stop clean distclean

all: test

# deps: everything the tests need; deps-demo: only what make demo needs, with the
# dashboard extra for `pyconductor dashboard` and `serve` (no pgTAP, sqitch or Chromium, no test extras)
deps:
	scripts/install-deps.sh all

deps-demo:
	scripts/install-deps.sh demo

devdb: deps-demo
	$(PY) -m pyconductor devdb start

migrate: devdb
	$(PY) -m pyconductor migrate

demo: migrate
	$(PY) -m pyconductor demo

pgtap: deps
	scripts/pgtap.sh

pytest: deps
	$(PY) -m pytest python/tests $(PYTEST_ARGS)

# Every part runs even when one before it fails (-k); the target fails if any did.
# Each part runs under a time budget (scripts/timed.sh: a hang fails that part,
# not the whole run), and the last lines say how each part ended and how long it took.
test: deps
	@mkdir -p build && : > build/test-summary.txt; rc=0; \
	CONDUCTOR_TEST_SUMMARY=$(CURDIR)/build/test-summary.txt \
	  $(MAKE) --no-print-directory -k test-base $(if $(strip $(VERSIONS)),test-versions) || rc=1; \
	echo "== make test: each part"; sort build/test-summary.txt; \
	if (( rc )); then echo "make test: FAILED" >&2; exit 1; fi; echo "make test: ok"

# The tests marked quick (python/tests/tiers.py). It installs the deps only when
# .venv is missing (their pip check alone costs about 13 s of the 2 minutes).
test-quick:
	@if [[ ! -x $(PY) ]]; then $(MAKE) --no-print-directory deps; fi
	$(PY) -m pytest python/tests -m quick $(PYTEST_ARGS)

# .venv's versions: pgTAP, then the whole pytest suite, even when pgTAP failed.
test-base: deps
	@rc=0; \
	scripts/timed.sh pgtap 900 scripts/pgtap.sh || rc=$$?; \
	scripts/timed.sh pytest 2100 $(PY) -m pytest python/tests $(PYTEST_ARGS) || rc=$$((rc ? rc : $$?)); \
	exit $$rc

# PostgreSQL 18 beside the Pythons, one after the other: two jobs, each mostly
# waiting on the server and on real seconds, fit two cores; the output of each
# part is printed whole when it ends (--output-sync).
test-versions: deps
	@scripts/versions.sh deps $(VERSIONS)
	@$(MAKE) --no-print-directory -k -j2 --output-sync=target \
	  $(filter test-pg18,$(VERSIONS:%=test-%)) $(if $(filter $(PY_VERSIONS),$(VERSIONS)),test-pythons) \
	  || { echo "make test-versions: FAILED" >&2; exit 1; }

test-pythons: deps
	@rc=0; \
	for v in $(filter $(PY_VERSIONS),$(VERSIONS)); do $(MAKE) --no-print-directory test-$$v || rc=$$((rc ? rc : $$?)); done; \
	exit $$rc

# PostgreSQL 18: pgTAP, then PG18_TESTS, on throwaway clusters of its binaries.
test-pg18: deps
	@scripts/versions.sh deps pg18
	@bindir=$$(scripts/versions.sh bindir pg18); rc=0; \
	echo "== PostgreSQL 18 ($$bindir): pgTAP"; \
	CONDUCTOR_PG_BINDIR=$$bindir scripts/timed.sh pg18-pgtap 900 scripts/pgtap.sh || rc=$$?; \
	echo "== PostgreSQL 18: pytest $(PG18_TESTS)"; \
	CONDUCTOR_PG_BINDIR=$$bindir scripts/timed.sh pg18-pytest 900 \
	  $(PY) -m pytest $(PG18_TESTS) $(PYTEST_ARGS) || rc=$$((rc ? rc : $$?)); \
	exit $$rc

# Python 3.12 / 3.13 with Django 6.0 / 6.1: PY_TESTS and DJANGO_TESTS.
$(PY_VERSIONS:%=test-%): test-%: deps
	@scripts/versions.sh deps $*
	@echo "== $*: pytest"
	scripts/timed.sh $* 480 .venv-$*/bin/python -m pytest $(PY_TESTS) $(DJANGO_TESTS) $(PYTEST_ARGS)

bench: deps
	bash bench/run.sh

# The SQL reference and the schema dump are generated from a throwaway deploy of
# the working tree (scripts/sql_reference.py, scripts/schema_dump.py); docs fails,
# naming docs-reference, when one is stale.
docs: deps
	$(PY) scripts/sql_reference.py --check
	$(PY) scripts/config_reference.py --check
	$(PY) scripts/schema_dump.py --check
	$(PY) -m mkdocs build --strict --site-dir build/site

docs-reference: deps
	$(PY) scripts/sql_reference.py
	$(PY) scripts/config_reference.py
	$(PY) scripts/schema_dump.py

# Needs only the build frontend (hatchling comes in build's isolated env): not
# the server, pgTAP or Chromium that `deps` installs. The sdist, then the wheel
# built from it, as pip does from PyPI; python/tests/test_wheel.py checks both.
dist:
	if [[ ! -x $(PY) ]]; then python3 -m venv $(VENV); fi
	$(PY) -c 'import build' 2>/dev/null || $(PY) -m pip install -q build
	rm -rf dist
	$(PY) -m build --outdir dist

devdb-stop:
	@if [[ -x $(PY) ]]; then $(PY) -m pyconductor devdb stop; else echo "no .venv: nothing to stop"; fi

# .devdb is a link to /var/tmp/conductor-devdb-* when the checkout is private (devdb.default_datadir)
clean: devdb-stop
	if [[ -L .devdb ]]; then rm -rf "$$(readlink -f .devdb)"; fi
	rm -rf .devdb build dist .pytest_cache .hypothesis python/*.egg-info
	find . -path './.venv*' -prune -o -name __pycache__ -type d -exec rm -rf {} +

distclean: clean
	if [[ -L .venv-pg18 ]]; then rm -rf "$$(readlink -f .venv-pg18)"; fi
	rm -rf $(VENV) .venv-pg18 $(PY_VERSIONS:%=.venv-%)
