#!/usr/bin/env bash
# Drain under load with a queue cap against without, alternated in one session
# (issue 30: "River's users report that a global limit halved their throughput"):
#
#     bash bench/cap_ab.sh                  # caps "1000 32", concurrency 32
#
# Starts a throwaway cluster (PostgreSQL's defaults), deploys the working tree's
# schema, then runs bench/drain_load.py at BENCH_DRAIN_CONCURRENCY (32) without a
# cap and with each cap of BENCH_CAPS ("1000 32": one that never binds, so the
# figure is the cap's bookkeeping; one equal to the worker's slots, which binds
# whenever the worker buffers claimed tasks), the order rotated every round.
# Prints each run's report and a summary line per run. Knobs: BENCH_CAPS,
# BENCH_DRAIN_CONCURRENCY, BENCH_DRAIN_SECONDS (30), BENCH_ROUNDS (2),
# BENCH_DRAIN_ARGS (more drain_load.py flags).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-$PWD/.venv/bin/python}
[[ -x $PY ]] || { echo "cap_ab: no $PY; run make deps" >&2; exit 1; }

work=$(mktemp -d /tmp/conductor-cap-ab.XXXXXX)
chmod 755 "$work"
cleanup() {
  env -u CONDUCTOR_DEVDB_SETTINGS "$PY" -m pyconductor devdb stop --datadir "$work/data" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

URL=$(env -u CONDUCTOR_DEVDB_SETTINGS "$PY" -m pyconductor devdb start --datadir "$work/data" --dbname bench 2>/dev/null)
"$PY" -m pyconductor migrate --dsn "$URL" >/dev/null

c=${BENCH_DRAIN_CONCURRENCY:-32}
sides=(none ${BENCH_CAPS:-1000 32})
echo "# queue cap A/B $(date -u +%Y-%m-%dT%H:%M:%SZ): HEAD $(git rev-parse --short HEAD) ($(git status --porcelain | wc -l) uncommitted), concurrency $c"
echo "machine: $(nproc) CPUs; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
summary=()
for round in $(seq 1 "${BENCH_ROUNDS:-2}"); do
  # rotate the order each round
  shift_by=$(( (round - 1) % ${#sides[@]} ))
  order=("${sides[@]:shift_by}" "${sides[@]:0:shift_by}")
  for side in "${order[@]}"; do
    flag=(); [[ $side != none ]] && flag=(--queue-limit "$side")
    echo
    echo "## round $round, cap $side (load $(cut -d' ' -f1 /proc/loadavg))"
    # shellcheck disable=SC2086
    out=$("$PY" bench/drain_load.py --dsn "$URL" --concurrency "$c" --seconds "${BENCH_DRAIN_SECONDS:-30}" \
            "${flag[@]}" ${BENCH_DRAIN_ARGS:-})
    echo "$out"
    summary+=("round $round cap=$side: $(grep -E 'tasks/s|server CPU|commits per' <<<"$out" \
                | sed -e 's/^ *//' -e 's/  */ /g' | paste -sd'|' | sed 's/|/ | /g')")
  done
done
echo
echo "## summary"
printf '%s\n' "${summary[@]}"
