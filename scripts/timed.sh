#!/usr/bin/env bash
# Run one part of `make test` under a time budget, and record how it ended.
#
#   scripts/timed.sh NAME SECONDS COMMAND [ARG...]
#
# CI stops the whole run at 90 minutes and shows only the end of its output: a
# part that hangs would cost every other part its result and leave no trace of
# where it hung. Here a part that outlives its budget gets SIGINT (pytest then
# prints where each test stood and its summary; PostgreSQL clusters started by
# the part shut down fast), SIGKILL a minute later, and a line that names it.
# Each part appends "NAME rc SECONDS" to $CONDUCTOR_TEST_SUMMARY when set, which
# `make test` prints last.
set -uo pipefail

(( $# >= 3 )) || { echo "usage: $0 NAME SECONDS COMMAND [ARG...]" >&2; exit 2; }
name=$1 budget=$2
shift 2

start=$SECONDS
timeout --signal=INT --kill-after=60 "$budget" "$@"
rc=$?
took=$(( SECONDS - start ))
if (( rc == 124 || rc == 137 )); then
  printf 'timed.sh: %s ran out of its %s s budget and was stopped (exit %s)\n' "$name" "$budget" "$rc" >&2
fi
if [[ -n ${CONDUCTOR_TEST_SUMMARY:-} ]]; then
  printf '%-16s %s\n' "$name" "$( (( rc == 0 )) && echo "ok" || echo "FAILED (exit $rc)") in ${took} s" \
    >> "$CONDUCTOR_TEST_SUMMARY"
fi
exit "$rc"
