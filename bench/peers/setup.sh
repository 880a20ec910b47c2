#!/usr/bin/env bash
# Create bench/.venv-peers (a venv of its own, never the project's .venv) and
# install the peers from bench/peers/requirements.txt. Safe to run twice.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
VENV=bench/.venv-peers
PYTHON=${BENCH_PEERS_PYTHON:-python3}
if [[ ! -x $VENV/bin/python ]]; then
  "$PYTHON" -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c 'import procrastinate, pgqueuer, asyncpg, psycopg' 2>/dev/null; then
  "$VENV/bin/pip" install -q --disable-pip-version-check -r bench/peers/requirements.txt 2>&1 | grep -v "is ignored: it is neither" || true
fi
"$VENV/bin/python" - <<'PY'
from importlib.metadata import version
print("peers:", ", ".join(f"{p} {version(p)}" for p in ("procrastinate", "pgqueuer", "asyncpg", "psycopg")))
PY
