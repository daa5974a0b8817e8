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
# The integration, ui and fuzz stages run side by side (docs/performance.md, "Stop 54's CI
# layout"). The integration packages and the browser files mostly wait (for runs of whole
# seconds, servers starting, fleets of ndbench processes: the integration stage used ~1.6 of
# the 2 cores, the ui stage ~0.4), and run one after the other they took ~640 + ~240 s.
# The fuzzers only compute, so they run at the lowest priority (nice 19): they take the CPU
# the tests leave idle and never the tests' share, so they cannot make a timed test late.
# The binary is built once, for the browser tests and the fleet tests both; the fleet tests
# exec a copy of it, which the ui target's own (up-to-date, so no-op) build cannot replace
# under them.
stage build "$make_cmd" build || exit $?
fuzzlog=$(mktemp "${TMPDIR:-/tmp}/ndbench-fuzz.XXXXXX")
uilog=$(mktemp "${TMPDIR:-/tmp}/ndbench-ui.XXXXXX")
fleetbin=$(mktemp -d "${TMPDIR:-/tmp}/ndbench-bin.XXXXXX")
trap 'rm -rf "$log" "$fuzzlog" "$uilog" "$fleetbin"' EXIT
cp bin/ndbench "$fleetbin/ndbench"
stage fuzz nice -n 19 "$make_cmd" fuzz >"$fuzzlog" 2>&1 &
fuzz_pid=$!
# The ui's output goes to its own log, printed after the integration stage's, so the two
# do not interleave line by line.
stage ui "$make_cmd" ui >"$uilog" 2>&1 &
ui_pid=$!
integration_status=0
TEST_NDBENCH_BIN="$fleetbin/ndbench" stage integration "$make_cmd" integration || integration_status=$?
ui_status=0
wait "$ui_pid" || ui_status=$?
echo "--- ui (ran beside integration)"
cat "$uilog"
fuzz_status=0
wait "$fuzz_pid" || fuzz_status=$?
echo "--- fuzz (ran beside integration and ui, at nice 19)"
cat "$fuzzlog"
for s in "$integration_status" "$ui_status" "$fuzz_status"; do
  if [ "$s" -ne 0 ]; then
    exit "$s"
  fi
done
echo "--- make test: $SECONDS s"
