#!/usr/bin/env bash
# What a release costs on the hot path: the SQL API of the plan's tag
# (default @v0.1.0) beside the head of the plan, in one throwaway cluster,
# each pgbench script run BENCH_ROUNDS times on each side, order alternated.
#
# Commits are made with synchronous_commit = off, so the figures compare the
# CPU the functions spend rather than this disk's flush time (which is the
# same on both sides). A ratio head/tag under 1 means the head is slower.
#
# Knobs: BENCH_TAG (@v0.1.0), BENCH_DURATION (6 s), BENCH_ROUNDS (3).
# `bash bench/releases.sh`; about 3 minutes on a 2-core machine.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PY=.venv/bin/python
TAG=${BENCH_TAG:-@v0.1.0}
DURATION=${BENCH_DURATION:-6}
ROUNDS=${BENCH_ROUNDS:-3}
[[ -x $PY ]] || { echo "releases: no $PY; run scripts/install-deps.sh (make deps)" >&2; exit 1; }
BINDIR=$($PY -c 'from pyconductor.dev.devdb import find_bindir; print(find_bindir())')

work=$(mktemp -d /tmp/conductor-releases.XXXXXX)
chmod 755 "$work"
cleanup() {
  env -u CONDUCTOR_DEVDB_SETTINGS "$PY" -m pyconductor devdb stop --datadir "$work/data" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

URL=$(env -u CONDUCTOR_DEVDB_SETTINGS "$PY" -m pyconductor devdb start --datadir "$work/data" --dbname postgres 2>/dev/null)
url() { "$PY" -c 'import sys; from psycopg.conninfo import make_conninfo; print(make_conninfo(sys.argv[1], dbname=sys.argv[2]))' "$URL" "$1"; }
psql_() { "$BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -At "$@"; }
psql_ -d "$URL" -c "create database tag" -c "create database head"
"$PY" -m pyconductor migrate --dsn "$(url tag)" --to "$TAG" >/dev/null
"$PY" -m pyconductor migrate --dsn "$(url head)" >/dev/null

echo "# Conductor: $TAG against the head of the plan ($(git rev-parse --short HEAD 2>/dev/null || echo '?'))"
echo "pgbench -c 1 -T $DURATION, synchronous_commit = off, $ROUNDS rounds, order alternated; $(nproc) CPUs"
echo

prepare() {  # $1 database, $2 script: an empty table, and a backlog for the claim scripts
  psql_ -d "$(url "$1")" -c "delete from conductor.attempts" -c "delete from conductor.tasks" >/dev/null
  if [[ $2 == api_claim* ]]; then
    psql_ -d "$(url "$1")" -c "select count(*) from conductor.enqueue_many((select jsonb_agg(jsonb_build_object(
      'kind', 'bench', 'queue', 'bench')) from generate_series(1, $(( 40000 * DURATION )))))" >/dev/null
  fi
  psql_ -d "$(url "$1")" -c "vacuum analyze conductor.tasks" -c "vacuum analyze conductor.attempts" >/dev/null
}
run() {  # $1 database, $2 script -> tps
  prepare "$1" "$2"
  PGOPTIONS="-c synchronous_commit=off" "$BINDIR/pgbench" -n -M simple -c 1 -j 1 -T "$DURATION" \
    -f "bench/$2.sql" "$(url "$1")" 2>&1 | sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p'
}

printf '| script | %s tps | head tps | head/%s (per round) |\n|---|---|---|---|\n' "$TAG" "$TAG"
for script in api_enqueue api_enqueue_50 api_claim_complete api_claim_complete_50; do
  tags=() heads=()
  for (( round = 1; round <= ROUNDS; round++ )); do
    if (( round % 2 )); then
      tags+=("$(run tag "$script")"); heads+=("$(run head "$script")")
    else
      heads+=("$(run head "$script")"); tags+=("$(run tag "$script")")
    fi
  done
  awk -v s="$script" -v t="${tags[*]}" -v h="${heads[*]}" 'BEGIN {
    n = split(t, ta, " "); split(h, ha, " "); st = 0; sh = 0; per = ""
    for (i = 1; i <= n; i++) { st += ta[i]; sh += ha[i]; per = per sprintf("%s%.2f", i > 1 ? ", " : "", ha[i] / ta[i]) }
    printf "| %s | %.0f | %.0f | **%.2f** (%s) |\n", s, st / n, sh / n, sh / st, per
  }'
done
