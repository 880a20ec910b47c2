#!/usr/bin/env bash
# What a task costs the server in CPU instructions, engine against the raw twin,
# counted by valgrind (callgrind), so a loaded or shared machine reads the same as
# an idle one (issue 26: the drain's CPU figures move by a third between runs here).
#
#     bash bench/instructions.sh            # the four pgbench pairs' statements
#     BENCH_PAIRS="d" bash bench/instructions.sh
#
# Starts a throwaway cluster (pyconductor devdb), deploys the schema of the working
# tree and the raw baseline (bench/raw_schema.sql), stops it and starts the same
# server again under `valgrind --tool=callgrind` (autovacuum off). Each figure is
# one backend's instructions: a session runs a setup (both tables emptied and
# refilled, vacuumed), then ROUNDS_LO or ROUNDS_HI rounds of a bench/ script; the
# difference between the two sessions, divided by the tasks the extra rounds
# handled, is the instructions a task, with the session's start, the setup and the
# first call's planning cancelled out. Pairs (the pgbench pairs of bench/run.sh):
#   a  enqueue (1 a call)                 bench/api_enqueue.sql     / raw_enqueue.sql
#   b  enqueue_many of 50                 bench/api_enqueue_50.sql  / raw_enqueue_50.sql
#   c  claim 1 + complete                 bench/api_claim_complete.sql / raw_claim_complete.sql
#   d  claim 50 + complete_many           bench/api_claim_complete_50.sql / raw_claim_complete_50.sql
#   e  enqueue_many of 50 as a client sends it: a JSON literal, against a
#      50-row INSERT ... VALUES literal of the same rows (written into $work)
#   f  the same with 500
# Pairs b, d, e and f are also counted on the storage twin (bench/twin_schema.sql: the
# engine's tables, columns and indexes without its functions; twin_enqueue_50.sql,
# twin_claim_complete_50.sql): twin/engine is what the engine's PL/pgSQL leaves of
# its storage's cost, raw/twin what that storage costs beside one table, one index.
# Repeated runs agree within about 2 %. Instructions are not time (a cache miss or a
# WAL flush costs none here), but they rank what the CPU does, and an A/B of the
# engine's own code, or of a variant a session creates in the running database
# (BENCH_KEEP=1 leaves it up and prints how to reach it), is exact enough to
# decide by. About 6 minutes on 2 cores. Knobs: BENCH_PAIRS ("a b c d e f"),
# ROUNDS_LO (2), ROUNDS_HI (10; pairs a and c take 5x both), BENCH_QUEUE_LIMIT
# (unset; N caps the engine's queue 'bench' at N running, set_queue_limit, in
# every session's setup: the claims of pairs c and d pay for the cap).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-$PWD/.venv/bin/python}
[[ -x $PY ]] || { echo "instructions: no $PY; run make deps" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "instructions: needs valgrind (apt-get install valgrind)" >&2; exit 1; }

work=$(mktemp -d /tmp/conductor-instructions.XXXXXX)
chmod 755 "$work"
data=$work/data
runas=()
[[ $(id -u) == 0 ]] && runas=(runuser -u postgres --)
cleanup() {
  if [[ -f $data/postmaster.pid ]]; then
    "${runas[@]}" "$bindir/pg_ctl" stop -D "$data" -m immediate >/dev/null 2>&1 || true
  fi
  [[ -n ${BENCH_KEEP:-} ]] || rm -rf "$work"
}
trap cleanup EXIT

url=$(env -u CONDUCTOR_DEVDB_SETTINGS "$PY" -m pyconductor devdb start --datadir "$data" --dbname bench 2>/dev/null)
bindir=$("$PY" -c 'from pyconductor.dev.devdb import find_bindir; print(find_bindir())')
"$PY" -m pyconductor migrate --dsn "$url" >/dev/null
psql -qX "$url" -f bench/raw_schema.sql >/dev/null 2>&1
psql -qX "$url" -f bench/twin_schema.sql >/dev/null 2>&1
env -u CONDUCTOR_DEVDB_SETTINGS "$PY" -m pyconductor devdb stop --datadir "$data" >/dev/null 2>&1
mkdir -p "$work/cg"
[[ ${#runas[@]} -gt 0 ]] && chown postgres "$work/cg"
# the same server, same settings file (port, socket), under callgrind
"${runas[@]}" valgrind --tool=callgrind --callgrind-out-file="$work/cg/cg.%p" \
  "$bindir/postgres" -D "$data" -c autovacuum=off >"$work/valgrind.log" 2>&1 &
for _ in $(seq 120); do psql -qXAt "$url" -c 'select 1' >/dev/null 2>&1 && break; sleep 1; done
psql -qXAt "$url" -c 'select 1' >/dev/null

setup() { # $1: tasks to queue on each side
  [[ -n ${BENCH_QUEUE_LIMIT:-} ]] && echo "select conductor.set_queue_limit('bench', $BENCH_QUEUE_LIMIT);"
  cat <<SQL
truncate conductor.attempts, conductor.tasks cascade;
select count(*) from conductor.enqueue_many((select jsonb_agg(jsonb_build_object('kind', 'bench', 'queue', 'bench',
  'payload', jsonb_build_object('n', g))) from generate_series(1, $1) g));
truncate bench_raw.jobs;
insert into bench_raw.jobs (queue, kind, payload) select 'bench', 'bench', jsonb_build_object('n', g) from generate_series(1, $1) g;
vacuum analyze conductor.tasks;
vacuum analyze conductor.attempts;
vacuum analyze bench_raw.jobs;
SQL
  # the twin only in its own sessions: a session that truncated and filled its tables
  # too paid 70,000 instructions more for each engine enqueue of pair (a)
  [[ -n ${2:-} ]] && cat <<SQL
truncate bench_twin.attempts, bench_twin.tasks;
insert into bench_twin.tasks (queue, kind, payload) select 'bench', 'bench', jsonb_build_object('n', g) from generate_series(1, $1) g;
vacuum analyze bench_twin.tasks;
vacuum analyze bench_twin.attempts;
SQL
  return 0
}

session() { # $1 script, $2 rounds, $3 tasks queued first, $4 (optional) the twin too -> the backend's instructions
  local script=$work/session.sql
  { echo '\o '"$work/pid"; echo 'select pg_backend_pid();'; echo '\o /dev/null'
    setup "$3" "${4:-}"
    for _ in $(seq "$2"); do cat "$1"; done
  } >"$script"
  psql -qXAt -v ON_ERROR_STOP=1 "$url" -f "$script" >/dev/null 2>"$work/err" \
    || { echo "instructions: $1 failed:" >&2; cat "$work/err" >&2; exit 1; }
  local pid out
  pid=$(tr -dc 0-9 <"$work/pid"); out=$work/cg/cg.$pid
  for _ in $(seq 60); do [[ -s $out ]] && break; sleep 1; done
  awk '/^summary:/ {print $2; exit}' "$out"
}

per_task() { # $1 script, $2 tasks a round, $3 rounds factor, $4 (optional) the twin's
  local lo=$(( ${ROUNDS_LO:-2} * $3 )) hi=$(( ${ROUNDS_HI:-10} * $3 )) a b
  a=$(session "$1" "$lo" $(( hi * $2 + 100 )) "${4:-}")
  b=$(session "$1" "$hi" $(( hi * $2 + 100 )) "${4:-}")
  echo $(( (b - a) / ((hi - lo) * $2) ))
}

echo "# instructions a task $(date -u +%Y-%m-%dT%H:%M:%SZ), HEAD $(git rev-parse --short HEAD) ($(git status --porcelain | wc -l) uncommitted), $("$bindir/postgres" --version)${BENCH_QUEUE_LIMIT:+, queue bench capped at $BENCH_QUEUE_LIMIT}"
literals() { # $1 tasks: the statements of pairs e and f, with their rows as literals
  local objects=() rows=() i
  for i in $(seq "$1"); do
    objects+=("{\"kind\": \"bench\", \"queue\": \"bench_enq\", \"payload\": {\"n\": $i}}")
    rows+=("('bench_enq', 'bench', '{\"n\": $i}')")
  done
  local IFS=,
  echo "select count(*) from conductor.enqueue_many('[${objects[*]}]');" >"$work/api_enqueue_$1_json.sql"
  echo "insert into bench_twin.tasks (queue, kind, payload) values ${rows[*]};" >"$work/twin_enqueue_$1_values.sql"
  echo "insert into bench_raw.jobs (queue, kind, payload) values ${rows[*]};" >"$work/raw_enqueue_$1_values.sql"
}
literals 50
literals 500
declare -A API=([a]=bench/api_enqueue [b]=bench/api_enqueue_50 [c]=bench/api_claim_complete
                [d]=bench/api_claim_complete_50 [e]=$work/api_enqueue_50_json [f]=$work/api_enqueue_500_json)
declare -A RAW=([a]=bench/raw_enqueue [b]=bench/raw_enqueue_50 [c]=bench/raw_claim_complete
                [d]=bench/raw_claim_complete_50 [e]=$work/raw_enqueue_50_values [f]=$work/raw_enqueue_500_values)
declare -A TWIN=([b]=bench/twin_enqueue_50 [d]=bench/twin_claim_complete_50 [e]=$work/twin_enqueue_50_values
                 [f]=$work/twin_enqueue_500_values)
declare -A BATCH=([a]=1 [b]=50 [c]=1 [d]=50 [e]=50 [f]=500)
declare -A FACTOR=([a]=5 [b]=1 [c]=5 [d]=1 [e]=1 [f]=1)
for pair in ${BENCH_PAIRS:-a b c d e f}; do
  api=$(per_task "${API[$pair]}.sql" "${BATCH[$pair]}" "${FACTOR[$pair]}")
  raw=$(per_task "${RAW[$pair]}.sql" "${BATCH[$pair]}" "${FACTOR[$pair]}")
  twin=
  [[ -n ${TWIN[$pair]:-} ]] && twin=$(per_task "${TWIN[$pair]}.sql" "${BATCH[$pair]}" "${FACTOR[$pair]}" twin)
  name=$(basename "${API[$pair]}")
  awk -v p="$pair" -v n="${name#api_}" -v a="$api" -v r="$raw" -v t="$twin" \
    'BEGIN { printf "(%s) %-22s engine %8d  raw %8d  raw/engine %.2f", p, n, a, r, r / a
             if (t != "") printf "  twin %8d  twin/engine %.2f  raw/twin %.2f", t, t / a, r / t
             printf "\n" }'
done
if [[ -n ${BENCH_KEEP:-} ]]; then
  echo "left running under callgrind: $url (data $data; stop: ${runas[*]} $bindir/pg_ctl stop -D $data)"
  trap - EXIT
fi
