# Conductor: set-up, development database, tests.
#   make demo        install deps, start the dev database, migrate, run the demo
#   make test        pgTAP (scripts/pgtap.sh) then pytest; fails if either fails
#   make bench       bench/run.sh
#   make docs        build the documentation site (mkdocs.yml) into build/site,
#                    after checking docs/reference/sql.md matches the schema
#   make docs-reference  regenerate docs/reference/sql.md from the functions' comments
#   make dist        build the wheel and sdist into dist/ (python -m build)
#   make devdb       start the development cluster (.devdb) and migrate it
#   make devdb-stop  stop it
#   make clean       stop the dev cluster, remove it and build/test caches
#   make distclean   clean, and remove .venv
# Every target is safe to run twice.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
VENV := .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: all deps deps-demo devdb migrate demo test pgtap pytest bench docs docs-reference dist devdb-stop clean distclean

all: test

# deps: everything the tests need; deps-demo: only what make demo needs (no pgTAP,
# sqitch or Chromium, no test extras)
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

# Both suites run even when the first fails; the target fails if either did.
test: deps
	@rc=0; \
	scripts/pgtap.sh || rc=$$?; \
	$(PY) -m pytest python/tests $(PYTEST_ARGS) || rc=$$((rc ? rc : $$?)); \
	if [[ $$rc -ne 0 ]]; then echo "make test: FAILED" >&2; fi; \
	exit $$rc

bench: deps
	bash bench/run.sh

# The SQL reference is generated from a throwaway deploy of the working tree
# (scripts/sql_reference.py); docs fails, naming docs-reference, when it is stale.
docs: deps
	$(PY) scripts/sql_reference.py --check
	$(PY) -m mkdocs build --strict --site-dir build/site

docs-reference: deps
	$(PY) scripts/sql_reference.py

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
	find . -path ./.venv -prune -o -name __pycache__ -type d -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
