#!/usr/bin/env bash
# What claim's concurrency keys cost (issue 25: v0.2.0 took an advisory lock per
# key, any login could hold one; the head locks a row of conductor.concurrency_slots
# per key): claim + complete of the plan's tag (default @v0.2.0) beside the head,
# without keys and with a key per task (every task of the backlog has a key of its
# own, so each claim locks one slot per task it takes: the most a claim can pay),
# and the raw SKIP LOCKED baseline (bench/raw_*.sql) in each database, all in one
# throwaway cluster, each run BENCH_ROUNDS times, the order alternated. A fourth
# variant, limited (issue 30), gives the backlog's tasks 64 keys (tenants) and
# concurrency_limit 4: the keys and their limits are in every claim's way, while
# 256 places are more than two claimers of 50 can hold, so limited/plain is what
# the limits cost a drain they do not hold back (@v0.2.0 has no limit and ignores
# it: its limited run is 64 keys of one task at a time). BENCH_VARIANTS=tenants
# runs the same 64 keys with limit 10000, which never holds back: limited/tenants
# is what the limit of 4 costs beside keys that are there anyway.
#
#   (c) bench/keys_claim_complete.sql      claim 1, then complete it
#   (d) bench/keys_claim_complete_50.sql   claim 50, then complete_many the 50
# (bench/api_claim_complete*.sql, except that a claim coming back empty does not
# abort the run: with a key per task, concurrent claimers probing the same first
# keys find some taken, in v0.2.0 as now), against bench/raw_claim_complete*.sql.
# The figure is tasks finished per second, counted in the table after each run.
#
# PostgreSQL's defaults (fsync and synchronous_commit on), as bench/run.sh.
# Knobs: BENCH_PAIRS ("c d"), BENCH_VARIANTS ("raw plain keyed limited"; the table
# needs all four), BENCH_DBS ("tag head"; "head" runs the head only), BENCH_TAG (@v0.2.0), BENCH_DURATION (10 s), BENCH_ROUNDS (2),
# BENCH_CLIENTS (2), BENCH_SINGLE_FILL / BENCH_BATCH_FILL (8000 / 40000 ready
# tasks per second of a run, for (c) / (d): a drained queue aborts the run). `bash bench/keys.sh`; about 7 minutes on a 2-core machine.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PY=.venv/bin/python
# this tree's pyconductor, so `migrate` deploys this tree's plan (a worktree's .venv may be another's)
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
TAG=${BENCH_TAG:-@v0.2.0}
DURATION=${BENCH_DURATION:-10}
ROUNDS=${BENCH_ROUNDS:-2}
CLIENTS=${BENCH_CLIENTS:-2}
[[ -x $PY ]] || { echo "keys: no $PY; run scripts/install-deps.sh (make deps)" >&2; exit 1; }
BINDIR=$($PY -c 'from pyconductor.dev.devdb import find_bindir; print(find_bindir())')

work=$(mktemp -d /tmp/conductor-keys.XXXXXX)
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
for db in tag head; do psql_ -d "$(url "$db")" -f bench/raw_schema.sql >/dev/null 2>&1; done

echo "# Conductor: claim with and without concurrency keys, $TAG against the head ($(git rev-parse --short HEAD 2>/dev/null || echo '?'))"
echo "pgbench -c $CLIENTS -j $CLIENTS -T $DURATION, simple protocol, PostgreSQL's defaults, $ROUNDS rounds, order alternated; $(nproc) CPUs"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

prepare() {  # $1 database, $2 pair (c|d), $3 variant (plain|keyed|limited|raw): a backlog, nothing else
  local fill=$(( ${BENCH_BATCH_FILL:-40000} * DURATION )) key="null" limit="null"
  [[ $2 == c ]] && fill=$(( ${BENCH_SINGLE_FILL:-8000} * DURATION ))
  [[ $3 == keyed ]] && key="'k' || i"
  [[ $3 == limited ]] && key="'tenant-' || (i % 64)" && limit=4
  [[ $3 == tenants ]] && key="'tenant-' || (i % 64)" && limit=10000
  psql_ -d "$(url "$1")" -c "delete from conductor.attempts" -c "delete from conductor.tasks" -c "delete from bench_raw.jobs" >/dev/null
  if [[ $3 == raw ]]; then
    psql_ -d "$(url "$1")" -c "insert into bench_raw.jobs (queue, kind, payload)
      select 'bench', 'bench', jsonb_build_object('n', i) from generate_series(1, $fill) i" >/dev/null
  else
    psql_ -d "$(url "$1")" -c "select count(*) from conductor.enqueue_many((select jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
      'kind', 'bench', 'queue', 'bench', 'concurrency_key', $key, 'concurrency_limit', $limit)))
      from generate_series(1, $fill) i))" >/dev/null
  fi
  psql_ -d "$(url "$1")" -c "vacuum analyze conductor.tasks" -c "vacuum analyze conductor.attempts" \
    -c "vacuum analyze bench_raw.jobs" -c "checkpoint" >/dev/null
}
run() {  # $1 database, $2 pair, $3 variant -> tasks finished per second
  local script out done
  prepare "$1" "$2" "$3"
  case $2 in c) script=claim_complete ;; d) script=claim_complete_50 ;; esac
  [[ $3 == raw ]] && script=raw_$script || script=keys_$script
  out=$("$BINDIR/pgbench" -n -M simple -c "$CLIENTS" -j "$CLIENTS" -T "$DURATION" -f "bench/$script.sql" "$(url "$1")" 2>&1) || {
    echo "keys: pgbench failed for $script on $1:" >&2; echo "$out" >&2; exit 1; }
  if [[ $3 == raw ]]; then
    done=$(psql_ -d "$(url "$1")" -c "select count(*) from bench_raw.jobs where status = 'done'")
  else
    done=$(psql_ -d "$(url "$1")" -c "select count(*) from conductor.tasks where status = 'succeeded'")
  fi
  awk -v n="$done" -v d="$DURATION" 'BEGIN { printf "%.1f", n / d }'
}

results=$work/results.tsv
: >"$results"
for (( round = 1; round <= ROUNDS; round++ )); do
  for pair in ${BENCH_PAIRS:-c d}; do
    order=(tag head)
    (( round % 2 == 0 )) && order=(head tag)
    [[ ${BENCH_DBS:-} == head ]] && order=(head)
    for db in "${order[@]}"; do
      for variant in ${BENCH_VARIANTS:-raw plain keyed limited}; do
        tps=$(run "$db" "$pair" "$variant")
        printf '%s\t%s\t%s\t%s\t%s\n' "$round" "$pair" "$db" "$variant" "$tps" >>"$results"
        printf '  round %s (%s) %-4s %-5s %8.1f tasks/s\n' "$round" "$pair" "$db" "$variant" "$tps" >&2
      done
    done
  done
done

echo "| pair | db | raw tasks/s | plain tasks/s | keyed tasks/s | limited tasks/s | plain/raw | keyed/raw | keyed/plain (per round) | limited/plain (per round) |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for pair in ${BENCH_PAIRS:-c d}; do
  for db in ${BENCH_DBS:-tag head}; do
    awk -F'\t' -v p="$pair" -v d="$db" -v label="$([[ $db == tag ]] && echo "$TAG" || echo head)" '
      $2 == p && $3 == d { s[$4] += $5; c[$4]++; r[$1, $4] = $5; if ($1 > maxr) maxr = $1 }
      END {
        raw = s["raw"] / c["raw"]; plain = s["plain"] / c["plain"]; keyed = s["keyed"] / c["keyed"]
        limited = s["limited"] / c["limited"]; per = ""; lper = ""
        for (i = 1; i <= maxr; i++) {
          per = per sprintf("%s%.2f", i > 1 ? ", " : "", r[i, "keyed"] / r[i, "plain"])
          lper = lper sprintf("%s%.2f", i > 1 ? ", " : "", r[i, "limited"] / r[i, "plain"])
        }
        printf "| (%s) | %s | %.0f | %.0f | %.0f | %.0f | %.2f | %.2f | **%.2f** (%s) | **%.2f** (%s) |\n", p, label,
               raw, plain, keyed, limited, plain / raw, keyed / raw, keyed / plain, per, limited / plain, lper
      }' "$results"
  done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
