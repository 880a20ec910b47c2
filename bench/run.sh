#!/usr/bin/env bash
# Conductor's benchmark (`make bench`): the SQL API against a bare SKIP LOCKED
# queue in the same database, then the Python driver end to end.
#
# Starts its own throwaway PostgreSQL cluster (PostgreSQL's default
# durability: fsync on, synchronous_commit on), deploys the schema with
# `pyconductor migrate`, creates the raw baseline (bench/raw_schema.sql), runs
# each pgbench pair (bench/api_*.sql against bench/raw_*.sql) BENCH_ROUNDS
# times for BENCH_DURATION seconds, alternating which side goes first, prints
# a table of TPS, tasks/s and API/raw ratios, then runs bench/bench_python.py.
# The cluster is removed on exit, whatever happens.
#
# Knobs (environment): BENCH_DURATION (s, default 15), BENCH_ROUNDS (2),
# BENCH_CLIENTS (2), BENCH_THREADS (2), BENCH_PY_TASKS (20000),
# BENCH_SKIP_PY=1 (pgbench only), BENCH_ONLY="a b c d" (a subset of pairs).
#
# BENCH_SUITE picks the parts (default "sql py", about 6 minutes, as before):
#   sql       the pgbench pairs above          py        bench/bench_python.py
#   peers     Python end to end vs Procrastinate and PGQueuer (bench/peers/,
#             installed into bench/.venv-peers by bench/peers/setup.sh), with
#             the pyconductor Worker at concurrency 32 and BENCH_HIGH_CONCURRENCY
#             (256), BENCH_PEER_ROUNDS (2) rounds, the order alternated
#   latency   pickup latency at 100 tasks/s, pyconductor and PGQueuer
#   scale     10 k vs 1 M queued vs BENCH_HISTORY_ROWS (5 M) finished rows
#   pressure  an xid held open for BENCH_PRESSURE_SECONDS (300); with
#             BENCH_PRESSURE_CONTROL=1 the same run again without the pin
#   workers   1, 2, 4, 8 worker processes, wait events, CPU
#   drain     drain under load (bench/drain_load.py): a producer keeps 4,000
#             tasks queued, one Worker at concurrency 32 and 128 runs 1 ms
#             handlers for BENCH_DRAIN_SECONDS (90); per finished task the
#             server's CPU, commits, WAL bytes and rows written per table
#   all       every part above (about 35 minutes on a 2-core machine)
# e.g. BENCH_SUITE="peers latency" make bench; BENCH_SUITE=all make bench.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PY=.venv/bin/python
DURATION=${BENCH_DURATION:-15}
ROUNDS=${BENCH_ROUNDS:-2}
CLIENTS=${BENCH_CLIENTS:-2}
THREADS=${BENCH_THREADS:-2}
PY_TASKS=${BENCH_PY_TASKS:-20000}
ONLY=${BENCH_ONLY:-a b c d}
SUITE=" ${BENCH_SUITE:-sql py} "
[[ $SUITE == *" all "* ]] && SUITE=" sql py peers latency scale pressure workers drain "
part() { [[ $SUITE == *" $1 "* ]]; }
# Ready tasks topped up before each claim run, so no run drains its queue:
# generous for a 2-core box (about 5x the rates seen there); a drained queue
# aborts the pgbench run (\gset finds no row), so it cannot go unnoticed.
SINGLE_FILL=${BENCH_SINGLE_FILL:-$(( 8000 * DURATION ))}
BATCH_FILL=${BENCH_BATCH_FILL:-$(( 40000 * DURATION ))}

[[ -x $PY ]] || { echo "bench: no $PY; run scripts/install-deps.sh (make deps)" >&2; exit 1; }
BINDIR=$($PY -c 'from pyconductor.dev.devdb import find_bindir; print(find_bindir())')
PSQL=("$BINDIR/psql" -X -q -v ON_ERROR_STOP=1)
PGBENCH=$BINDIR/pgbench

work=$(mktemp -d /tmp/conductor-bench.XXXXXX)
chmod 755 "$work"   # the postgres OS user must reach the data dir under it
cleanup() {
  env -u CONDUCTOR_DEVDB_SETTINGS "$PY" -m pyconductor devdb stop --datadir "$work/data" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "bench: starting a throwaway cluster in $work/data" >&2
# No extra settings: PostgreSQL's defaults, whatever the caller's environment says.
URL=$(env -u CONDUCTOR_DEVDB_SETTINGS "$PY" -m pyconductor devdb start --datadir "$work/data" --dbname bench 2>/dev/null)
"$PY" -m pyconductor migrate --dsn "$URL" >/dev/null
"${PSQL[@]}" -d "$URL" -f bench/raw_schema.sql 2>/dev/null
sql() {  # each argument is one command, run in its own transaction
  local args=() c
  for c in "$@"; do args+=(-c "$c"); done
  "${PSQL[@]}" -At -d "$URL" "${args[@]}"
}

echo "# Conductor bench $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(awk '/MemTotal/ {printf "%.1f GiB RAM", $2/1048576}' /proc/meminfo)"
echo "code: HEAD $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(git status --porcelain -- sql sqitch.plan 2>/dev/null | wc -l) uncommitted change(s) under sql/ (deployed from the working tree)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "server: $(sql 'select version()')"
echo "settings: $(sql "select string_agg(name || '=' || current_setting(name), ', ' order by name)
                      from pg_settings where name in ('fsync', 'synchronous_commit', 'full_page_writes',
                      'wal_sync_method', 'shared_buffers', 'wal_buffers', 'max_wal_size', 'checkpoint_timeout',
                      'commit_delay', 'work_mem', 'wal_level', 'autovacuum')")"
echo "pgbench: -c $CLIENTS -j $THREADS -T $DURATION, simple query protocol, $ROUNDS rounds, order alternated per round"
echo

# Each run starts from the same state: finished rows pruned (both sides),
# claim queues topped up to a fixed backlog, VACUUM ANALYZE, CHECKPOINT.
prune() {
  sql "delete from conductor.attempts; delete from conductor.tasks where status <> 'queued' or queue = 'bench_enq';
       delete from bench_raw.jobs where status <> 'queued' or queue = 'bench_enq';" >/dev/null
}
topup() {  # $1: ready tasks wanted in queue 'bench', on each side
  local want=$1 have
  have=$(sql "select count(*) from conductor.tasks where queue = 'bench' and status = 'queued'")
  while (( have < want )); do
    local n=$(( want - have > 10000 ? 10000 : want - have ))
    sql "select count(*) from conductor.enqueue_many((select jsonb_agg(jsonb_build_object(
           'kind', 'bench', 'queue', 'bench', 'payload', jsonb_build_object('n', i)))
           from generate_series(1, $n) i))" >/dev/null
    have=$(( have + n ))
  done
  have=$(sql "select count(*) from bench_raw.jobs where queue = 'bench' and status = 'queued'")
  if (( have < want )); then
    sql "insert into bench_raw.jobs (queue, kind, payload)
         select 'bench', 'bench', jsonb_build_object('n', i) from generate_series(1, $(( want - have ))) i" >/dev/null
  fi
}
prepare() {  # $1: pair letter
  prune
  case $1 in c) topup "$SINGLE_FILL" ;; d) topup "$BATCH_FILL" ;; esac
  sql "vacuum analyze conductor.tasks" "vacuum analyze conductor.attempts" "vacuum analyze bench_raw.jobs" checkpoint >/dev/null
}

declare -A SCRIPT=([a]=enqueue [b]=enqueue_50 [c]=claim_complete [d]=claim_complete_50)
declare -A PER_TX=([a]=1 [b]=50 [c]=1 [d]=50)
declare -A LABEL=(
  [a]="(a) enqueue 1/tx"
  [b]="(b) enqueue 50/stmt"
  [c]="(c) claim 1 + complete 1"
  [d]="(d) claim 50 + complete_many 50"
)
results=$work/results.tsv
: >"$results"

run_one() {  # $1 pair, $2 side (api|raw), $3 round
  local pair=$1 side=$2 round=$3 out tps
  prepare "$pair"
  out=$("$PGBENCH" -n -M simple -c "$CLIENTS" -j "$THREADS" -T "$DURATION" \
        -f "bench/${side}_${SCRIPT[$pair]}.sql" "$URL" 2>&1) || {
    echo "bench: pgbench failed for ${side}_${SCRIPT[$pair]} (round $round):" >&2
    echo "$out" >&2
    exit 1
  }
  tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' <<<"$out")
  printf '%s\t%s\t%s\t%s\n' "$pair" "$side" "$round" "$tps" >>"$results"
  printf '  round %s  %-3s %-34s %10.1f tps %10.1f tasks/s\n' "$round" "$side" "${LABEL[$pair]}" \
    "$tps" "$(awk -v t="$tps" -v n="${PER_TX[$pair]}" 'BEGIN { print t * n }')"
}

if part sql; then
echo "## pgbench runs"
for (( round = 1; round <= ROUNDS; round++ )); do
  for pair in $ONLY; do
    if (( round % 2 )); then order="api raw"; else order="raw api"; fi
    for side in $order; do run_one "$pair" "$side" "$round"; done
  done
done
prune

echo
echo "## Summary (mean of $ROUNDS rounds; tasks/s = TPS x tasks per transaction)"
echo "commits per task: (a) 1, (b) 1/50, (c) 2 (claim commit + complete commit), (d) 2/50; API and raw alike"
echo
printf '| %-32s | %10s | %10s | %12s | %12s | %9s | %s\n' variant "API tps" "raw tps" "API tasks/s" "raw tasks/s" "API/raw" "per-round API/raw |"
printf '|%s|%s|%s|%s|%s|%s|%s\n' "$(printf -- '-%.0s' {1..34})" ------------ ------------ -------------- -------------- ----------- "--------------------|"
for pair in $ONLY; do
  awk -F'\t' -v p="$pair" -v n="${PER_TX[$pair]}" -v label="${LABEL[$pair]}" '
    $1 == p { s[$2] += $4; c[$2]++; r[$3, $2] = $4; if ($3 > maxr) maxr = $3 }
    END {
      api = s["api"] / c["api"]; raw = s["raw"] / c["raw"]
      per = ""
      for (i = 1; i <= maxr; i++) per = per sprintf("%s%.2f", i > 1 ? " " : "", r[i, "api"] / r[i, "raw"])
      printf "| %-32s | %10.1f | %10.1f | %12.1f | %12.1f | %9.2f | %s |\n", label, api, raw, api * n, raw * n, api / raw, per
    }' "$results"
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
fi

if part py && [[ ${BENCH_SKIP_PY:-0} != 1 ]]; then
  echo
  echo "## Python driver (bench/bench_python.py --tasks $PY_TASKS)"
  "$PY" bench/bench_python.py --dsn "$URL" --tasks "$PY_TASKS" --clean-all
fi

loadavg() { echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"; }
peer_db() {  # $1: database name; a database of its own on the same server
  sql "set client_min_messages = warning" "drop database if exists $1" "create database $1" >/dev/null
  echo "${URL%/*}/$1"
}

if part peers || part latency; then
  echo
  echo "## Peers' environment (bench/peers/setup.sh -> bench/.venv-peers)"
  bash bench/peers/setup.sh
  PEERPY=bench/.venv-peers/bin/python
fi

if part peers; then
  HIGH=${BENCH_HIGH_CONCURRENCY:-256}
  PEER_ROUNDS=${BENCH_PEER_ROUNDS:-2}
  PGQ_URL=$(peer_db bench_pgqueuer)
  echo
  echo "## Python end to end: drain $PY_TASKS no-op tasks (pyconductor, PGQueuer, Procrastinate)"
  echo "$PEER_ROUNDS rounds of pyconductor (concurrency 32 and $HIGH) and PGQueuer, the order alternated per round;"
  echo "the ratio is taken within each round (this machine's speed drifts between runs)."
  loadavg
  declare -A drain
  for round in $(seq "$PEER_ROUNDS"); do
    drain=()
    order=(pyconductor pgqueuer)
    (( round % 2 == 0 )) && order=(pgqueuer pyconductor)
    for who in "${order[@]}"; do
      if [[ $who == pyconductor ]]; then
        for c in 32 "$HIGH"; do
          echo "- round $round: pyconductor Worker, concurrency $c (bench/bench_python.py --concurrency $c):"
          out=$("$PY" bench/bench_python.py --dsn "$URL" --tasks "$PY_TASKS" --clean-all --concurrency "$c" \
                --single-seconds "$(( round == 1 ? 5 : 1 ))")
          sed 's/^/    /' <<<"$out"
          drain[$c]=$(sed -n 's/^python Worker drain, concurrency [0-9]*: *\([0-9.]*\) tasks.*/\1/p' <<<"$out")
          [[ $c == 32 ]] && drain[enq]=$(sed -n 's/^python enqueue, 1 per call[^:]*: *\([0-9.]*\) tasks.*/\1/p' <<<"$out")
        done
      else
        echo "- round $round: PGQueuer (bench/peers/pgqueuer_bench.py drain: 5 QueueManagers, batch_size 10, asyncpg, uvloop):"
        out=$("$PEERPY" bench/peers/pgqueuer_bench.py drain --dsn "$PGQ_URL" --jobs "$PY_TASKS")
        sed 's/^/    /' <<<"$out"
        drain[pgq]=$(sed -n 's/.*"rate": \([0-9.]*\).*/\1/p' <<<"$out")
        echo "- round $round: PGQueuer single enqueue (bench/peers/pgqueuer_bench.py enqueue: one job per call and commit):"
        out=$("$PEERPY" bench/peers/pgqueuer_bench.py enqueue --dsn "$PGQ_URL" --seconds "$(( round == 1 ? 5 : 1 ))")
        sed 's/^/    /' <<<"$out"
        drain[pgqenq]=$(sed -n 's/.*"rate": \([0-9.]*\).*/\1/p' <<<"$out")
      fi
    done
    # a run that printed no rate leaves an empty figure: say so rather than divide by it
    awk -v r="$round" -v a="${drain[32]:-}" -v b="${drain[$HIGH]:-}" -v q="${drain[pgq]:-}" -v h="$HIGH" \
      'BEGIN { if (a == "" || b == "" || q + 0 <= 0) { printf "  round %s: a rate is missing above; no ratio\n", r; exit }
               printf "  round %s: pyconductor / PGQueuer = %.2f at concurrency 32, %.2f at %s\n", r, a / q, b / q, h }'
    awk -v r="$round" -v a="${drain[enq]:-}" -v q="${drain[pgqenq]:-}" \
      'BEGIN { if (a == "" || q + 0 <= 0) { printf "  round %s: a single-enqueue rate is missing above; no ratio\n", r; exit }
               printf "  round %s: single enqueue, app.enqueue / PGQueuer enqueue = %.2f\n", r, a / q }'
  done
  PRO_URL=$(peer_db bench_procrastinate)
  for c in ${BENCH_PROCRASTINATE_CONCURRENCY:-4}; do
    DJ=${BENCH_PROCRASTINATE_DELETE_JOBS:-successful}
    echo "- Procrastinate (bench/peers/procrastinate_bench.py: run_worker_async, concurrency $c, delete_jobs=$DJ, LISTEN/NOTIFY):"
    "$PEERPY" bench/peers/procrastinate_bench.py --dsn "$PRO_URL" --jobs "$PY_TASKS" --concurrency "$c" \
      --delete-jobs "$DJ" 2>/dev/null | sed 's/^/    /'
  done
  loadavg
fi

if part latency; then
  echo
  echo "## Pickup latency, ${BENCH_LATENCY_RATE:-100} tasks/s for ${BENCH_LATENCY_SECONDS:-30} s, idle workers"
  loadavg
  "$PY" bench/latency.py --dsn "$URL" --rate "${BENCH_LATENCY_RATE:-100}" --seconds "${BENCH_LATENCY_SECONDS:-30}" | sed 's/^/    /'
  PGQ_URL=$(peer_db bench_pgqueuer)
  "$PEERPY" bench/peers/pgqueuer_bench.py latency --dsn "$PGQ_URL" --rate "${BENCH_LATENCY_RATE:-100}" \
    --seconds "${BENCH_LATENCY_SECONDS:-30}" | sed 's/^/    /'
  loadavg
fi

if part scale; then
  echo
  echo "## Cost as work grows (bench/scale.py, ${BENCH_HISTORY_ROWS:-5000000} finished rows)"
  loadavg
  "$PY" bench/scale.py --dsn "$URL" --history "${BENCH_HISTORY_ROWS:-5000000}"
  loadavg
fi

if part pressure; then
  echo
  echo "## Pressure: an xid held open for ${BENCH_PRESSURE_SECONDS:-300} s (bench/pressure.py)"
  loadavg
  pressure_args=(--dsn "$URL" --hold-seconds "${BENCH_PRESSURE_SECONDS:-300}"
    --clean-seconds "${BENCH_PRESSURE_CLEAN_SECONDS:-60}" --after-seconds "${BENCH_PRESSURE_AFTER_SECONDS:-120}")
  "$PY" bench/pressure.py "${pressure_args[@]}"
  loadavg
  if [[ ${BENCH_PRESSURE_CONTROL:-0} == 1 ]]; then
    echo
    echo "### Control: the same phases, nobody holding a transaction (what table growth alone costs)"
    "$PY" bench/pressure.py "${pressure_args[@]}" --control
    loadavg
  fi
fi

if part workers; then
  echo
  echo "## Many workers: ${BENCH_WORKERS:-1,2,4,8} processes (bench/workers.py)"
  loadavg
  "$PY" bench/workers.py --dsn "$URL" --procs "${BENCH_WORKERS:-1,2,4,8}" --tasks "$PY_TASKS"
  loadavg
fi

if part drain; then
  echo
  echo "## Drain under load (bench/drain_load.py --seconds ${BENCH_DRAIN_SECONDS:-90})"
  loadavg
  for c in ${BENCH_DRAIN_CONCURRENCY:-32 128}; do
    "$PY" bench/drain_load.py --dsn "$URL" --concurrency "$c" --seconds "${BENCH_DRAIN_SECONDS:-90}"
  done
  loadavg
fi
