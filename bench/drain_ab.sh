#!/usr/bin/env bash
# Drain under load, an older commit against the working tree, alternated in one
# session (issue 26's "old and new code alternated in the same run"):
#
#     bash bench/drain_ab.sh REF                  # e.g. v0.2.0, or a commit
#
# Starts a throwaway cluster (PostgreSQL's defaults), checks REF out in a
# temporary git worktree, deploys each side's schema with its own `pyconductor
# migrate` into a database of its own (ref, head), then runs
# bench/drain_load.py (this tree's) for each concurrency and round, each side
# importing its own pyconductor (PYTHONPATH), the order swapped every round.
# Prints each run's report and a summary line per run. The cluster and the
# worktree are removed on exit.
#
# Knobs: BENCH_DRAIN_CONCURRENCY ("32 128"), BENCH_DRAIN_SECONDS (90),
# BENCH_ROUNDS (2), BENCH_DRAIN_ARGS (more drain_load.py flags, e.g. --async).
# BENCH_AB=calls runs bench/call_cost.py (a call's backend CPU) instead of the
# drain, once per side and round (BENCH_CALLS calls a figure, default 2000).

set -euo pipefail
cd "$(dirname "$0")/.."
REF=${1:?usage: bash bench/drain_ab.sh REF (a tag or commit to compare the working tree with)}
PY=${PY:-$PWD/.venv/bin/python}
[[ -x $PY ]] || { echo "drain_ab: no $PY; run make deps" >&2; exit 1; }
git rev-parse --verify --quiet "$REF^{commit}" >/dev/null || { echo "drain_ab: no commit $REF" >&2; exit 1; }

work=$(mktemp -d /tmp/conductor-drain-ab.XXXXXX)
chmod 755 "$work"
cleanup() {
  env -u CONDUCTOR_DEVDB_SETTINGS "$PY" -m pyconductor devdb stop --datadir "$work/data" >/dev/null 2>&1 || true
  git worktree remove --force "$work/ref" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

git worktree add --detach "$work/ref" "$REF" >/dev/null 2>&1
URL=$(env -u CONDUCTOR_DEVDB_SETTINGS "$PY" -m pyconductor devdb start --datadir "$work/data" --dbname head 2>/dev/null)
"$PY" -c 'import psycopg, sys
with psycopg.connect(sys.argv[1], autocommit=True) as c:
    c.execute("create database ref")' "$URL"
declare -A DSN=([head]=$URL [ref]=${URL%/head*}/ref${URL#*/head})
declare -A PATHS=([head]=$PWD/python [ref]=$work/ref/python)
for side in ref head; do
  PYTHONPATH=${PATHS[$side]} "$PY" -m pyconductor migrate --dsn "${DSN[$side]}" >/dev/null
done

echo "# drain A/B $(date -u +%Y-%m-%dT%H:%M:%SZ): ref $REF ($(git rev-parse --short "$REF")) against the working tree (HEAD $(git rev-parse --short HEAD), $(git status --porcelain | wc -l) uncommitted)"
echo "machine: $(nproc) CPUs; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
summary=()
for round in $(seq 1 "${BENCH_ROUNDS:-2}"); do
  if [[ ${BENCH_AB:-drain} == calls ]]; then
    order="ref head"; (( round % 2 == 0 )) && order="head ref"
    for side in $order; do
      out=$(PYTHONPATH=${PATHS[$side]} "$PY" bench/call_cost.py --dsn "${DSN[$side]}" --calls "${BENCH_CALLS:-2000}")
      echo "round $round $side: $out"
      summary+=("round $round $side: $out")
    done
    continue
  fi
  for c in ${BENCH_DRAIN_CONCURRENCY:-32 128}; do
    order="ref head"; (( round % 2 == 0 )) && order="head ref"
    for side in $order; do
      echo
      echo "## round $round, concurrency $c, $side (load $(cut -d' ' -f1 /proc/loadavg))"
      # shellcheck disable=SC2086
      out=$(PYTHONPATH=${PATHS[$side]} "$PY" bench/drain_load.py --dsn "${DSN[$side]}" --concurrency "$c" \
              --seconds "${BENCH_DRAIN_SECONDS:-90}" ${BENCH_DRAIN_ARGS:-})
      echo "$out"
      summary+=("round $round c=$c $side: $(grep -E 'tasks/s|server CPU|commits per|WAL per|machine busy' <<<"$out" \
                  | sed -e 's/^ *//' -e 's/  */ /g' | paste -sd'|' | sed 's/|/ | /g')")
    done
  done
done
echo
echo "## summary"
printf '%s\n' "${summary[@]}"
