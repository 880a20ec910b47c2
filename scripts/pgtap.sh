#!/usr/bin/env bash
# Deploy the schema with sqitch into a fresh database, run every pgTAP file
# under sql/tests (or only the files and folders named as arguments) with
# pg_prove, then prove the migrations: revert to zero and deploy again. Exit
# non-zero on any failure.
#
# Server: a throwaway cluster (pyconductor devdb, temp dir, stopped on exit)
# of the binaries pyconductor.dev.devdb.find_bindir() picks ($CONDUCTOR_PG_BINDIR
# first: make test-pg18 sets it), or the server at $CONDUCTOR_TEST_DSN (a URL
# whose user may create databases). The log names the server's version.
# Needs scripts/install-deps.sh to have run (.venv, sqitch, pg_prove, pgTAP).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PY=${CONDUCTOR_PYTHON:-.venv/bin/python}
log() { printf 'pgtap.sh: %s\n' "$*" >&2; }
die() { log "FAILED: $*"; exit 1; }

# Name the files: pg_prove given a folder without -r silently runs nothing.
# Arguments name test files or folders to run instead of all (the migration
# proof still runs).
if (( $# )); then
  mapfile -t tests < <(find "$@" -name '*.sql' -type f | LC_ALL=C sort)
else
  mapfile -t tests < <(find sql/tests -name '*.sql' -type f | LC_ALL=C sort)
fi
(( ${#tests[@]} )) || die "no pgTAP test files (*.sql) under sql/tests"

for tool in sqitch pg_prove psql; do
  command -v "$tool" >/dev/null || die "$tool not found; run scripts/install-deps.sh"
done
[[ -x $PY ]] || die "$PY not found; run scripts/install-deps.sh"

tmp=$(mktemp -d /tmp/conductor-pgtap.XXXXXX)
chmod 755 "$tmp"
db=conductor_pgtap_$$
cleanup() {
  local rc=$?
  if [[ -n ${admin_url:-} ]]; then
    psql -q -X "$admin_url" -c "drop database if exists $db with (force)" >/dev/null 2>&1 || true
  fi
  if [[ -z ${CONDUCTOR_TEST_DSN:-} ]]; then
    "$PY" -m pyconductor devdb stop --datadir "$tmp/data" >/dev/null 2>&1 || true
  fi
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT

if [[ -n ${CONDUCTOR_TEST_DSN:-} ]]; then
  server=$CONDUCTOR_TEST_DSN
else
  log "starting a throwaway cluster in $tmp/data"
  server=$("$PY" -m pyconductor devdb start --datadir "$tmp/data" --dbname postgres)
fi

# host, port, user, password of the server, and URLs for sqitch and psql.
eval "$("$PY" - "$server" "$db" "${CONDUCTOR_TEST_DSN:+external}" "$tmp/data" <<'PYEOF'
import shlex, sys
from urllib.parse import quote
from psycopg.conninfo import conninfo_to_dict
server, db, external, datadir = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
info = conninfo_to_dict(server)
host = info.get("host") or "127.0.0.1"
port = str(info.get("port") or 5432)
user = info.get("user") or ""
password = info.get("password") or ""
socket_host = host
if not external:
    from pyconductor.dev.devdb import DevDB
    socket_host = DevDB(datadir).conninfo()["host"]
userinfo = quote(user, safe="") + (":" + quote(password, safe="") if password else "")
tcp_host = host if not host.startswith("/") else ""
query = "" if tcp_host else "?host=" + quote(host, safe="")
out = {
    "PG_HOST": socket_host, "PG_PORT": port, "PG_USER": user, "PGPASSWORD": password,
    "admin_url": f"postgresql://{userinfo}@{tcp_host}:{port}/postgres{query}",
    "test_url": f"postgresql://{userinfo}@{tcp_host}:{port}/{db}{query}",
    "sqitch_target": f"db:pg://{userinfo}@{tcp_host}:{port}/{db}{query}",
}
for k, v in out.items():
    print(f"{k}={shlex.quote(v)}")
PYEOF
)"
export PGPASSWORD
[[ -n $PGPASSWORD ]] || unset PGPASSWORD

log "server: PostgreSQL $(psql -X -At "$admin_url" -c 'show server_version')"
PGOPTIONS="-c client_min_messages=warning" psql -q -X -v ON_ERROR_STOP=1 "$admin_url" -c "drop database if exists $db with (force)" -c "create database $db" \
  || die "cannot create database $db"

# sqitch wants a name and e-mail for its registry.
export SQITCH_USER_NAME=${SQITCH_USER_NAME:-conductor-ci}
export SQITCH_USER_EMAIL=${SQITCH_USER_EMAIL:-ci@conductor.invalid}
# Keep sqitch's own files in the temp dir, out of $HOME.
export SQITCH_USER_CONFIG=$tmp/sqitch-user.conf
touch "$SQITCH_USER_CONFIG"

log "sqitch deploy --verify"
sqitch deploy --verify "$sqitch_target" || die "sqitch deploy --verify"

psql -q -X -v ON_ERROR_STOP=1 "$test_url" -c "create extension if not exists pgtap" \
  || die "create extension pgtap (is postgresql-<version>-pgtap installed?)"
# A test database: the admin switches the fake clock on, so tests move time with
# SET conductor.fake_now (sql/tests/settings/ checks that nobody can without it).
psql -q -X -v ON_ERROR_STOP=1 "$test_url" -c "update conductor.settings set fake_clock = true" \
  || die "cannot switch the fake clock on"

# A file that hangs (a lock wait no deadlock detector can see: dblink sessions
# waiting on each other) must not hang the run: pg_prove gets a budget, and when
# it runs out the log shows what each session of the test database was doing
# before they are ended.
budget=${CONDUCTOR_PGTAP_TIMEOUT:-600}
log "pg_prove: ${#tests[@]} file(s), ${budget} s at most"
pg_prove -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -d "$db" --ext .sql "${tests[@]}" &
prove_pid=$!
deadline=$(( SECONDS + budget ))
while kill -0 "$prove_pid" 2>/dev/null && (( SECONDS < deadline )); do sleep 1; done
stopped=0
if kill -0 "$prove_pid" 2>/dev/null; then
  stopped=1
  log "pg_prove ran out of its ${budget} s (CONDUCTOR_PGTAP_TIMEOUT); the sessions of $db:"
  psql -X -P pager=off "$admin_url" -c "
    select pid, usename, state, wait_event_type, wait_event, now() - xact_start as in_transaction,
           pg_blocking_pids(pid) as blocked_by, left(query, 300) as query
      from pg_stat_activity where datname = '$db' and pid <> pg_backend_pid() order by xact_start" >&2 || true
  pkill -TERM -P "$prove_pid" || true  # its psql
  kill -TERM "$prove_pid" || true
fi
prove_rc=0
wait "$prove_pid" || prove_rc=$?
(( ! stopped )) || die "pg_prove did not finish within ${budget} s"

log "migration proof: sqitch revert to zero, then deploy --verify again"
sqitch revert -y "$sqitch_target" || die "sqitch revert -y"
left=$(psql -X -At "$test_url" -c "select count(*) from pg_namespace where nspname = 'conductor'")
[[ $left == 0 ]] || die "schema conductor still exists after sqitch revert to zero"
sqitch deploy --verify "$sqitch_target" || die "sqitch deploy after revert"

(( prove_rc == 0 )) || die "pg_prove reported failures (exit $prove_rc)"
log "ok"
