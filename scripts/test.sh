#!/usr/bin/env bash
# make test: the whole suite (lint, unit-rest, integration, ui, fuzz), with the installs
# that the integration and browser stages need running in the background while lint and
# the unit tests use the CPU. On a new machine the installs (apt packages, the servers'
# distributions from Maven Central, helm from its Go module, Chromium, npm) took minutes
# of mostly network and disk time that used to come before the integration tests started.
# The integration and ui targets still run their install scripts, which are idempotent and
# return at once when everything is there, so `make integration` alone keeps working.
set -euo pipefail
cd "$(dirname "$0")/.."
make_cmd=${MAKE:-make}

log=$(mktemp "${TMPDIR:-/tmp}/ndbench-install.XXXXXX")
trap 'rm -f "$log"' EXIT
# One after the other: both may call apt-get, which takes a lock.
( bash scripts/install-test-deps.sh && bash scripts/install-ui-test-deps.sh ) >"$log" 2>&1 &
install_pid=$!

# Each stage's wall time is printed as it ends, so a CI log says where a run's time went
# (docs/performance.md, "CI time", compares them with the bar).
stage() {
  local name=$1 began=$SECONDS rc=0
  shift
  "$@" || rc=$?
  echo "--- stage $name: $((SECONDS - began)) s (exit $rc)"
  return "$rc"
}

status=0
stage lint "$make_cmd" lint || status=$?
if [ "$status" -eq 0 ]; then
  stage unit-rest "$make_cmd" unit-rest || status=$?
fi

# An install is never killed half-way (an interrupted dpkg leaves the machine broken for
# the next run): a failing lint still waits for it.
install_status=0
stage "installs (the rest of their time)" wait "$install_pid" || install_status=$?
echo "--- installs (ran beside lint and unit-rest)"
cat "$log"
if [ "$install_status" -ne 0 ]; then
  echo "test: installing the test dependencies failed (exit $install_status); see above" >&2
  exit "$install_status"
fi
if [ "$status" -ne 0 ]; then
  exit "$status"
fi
stage integration "$make_cmd" integration

# The fuzz stage runs beside the browser tests, its workers on one core (FUZZ_PARALLEL=1):
# the browser files mostly wait for runs of whole seconds (about 0.4 of the 2 cores here),
# and the fuzzers only compute, so side by side they take about the ui stage's time instead
# of the sum (docs/performance.md, "CI time"). One core kept busy is also the load the
# suite must stay green under (issue 33). The fuzzers' output is printed after the ui's.
fuzzlog=$(mktemp "${TMPDIR:-/tmp}/ndbench-fuzz.XXXXXX")
trap 'rm -f "$log" "$fuzzlog"' EXIT
stage fuzz "$make_cmd" fuzz FUZZ_PARALLEL=1 >"$fuzzlog" 2>&1 &
fuzz_pid=$!
ui_status=0
stage ui "$make_cmd" ui || ui_status=$?
fuzz_status=0
wait "$fuzz_pid" || fuzz_status=$?
echo "--- fuzz (ran beside ui)"
cat "$fuzzlog"
if [ "$ui_status" -ne 0 ]; then
  exit "$ui_status"
fi
if [ "$fuzz_status" -ne 0 ]; then
  exit "$fuzz_status"
fi
echo "--- make test: $SECONDS s"
