# Sourced by bench/recovery/run and bench/recovery/coordinator (which set
# root, dslaunch and tmp): one run of the property test on a fresh 3-node
# netns cluster, every trial's outcome appended to RESULTS.
#   prop RESULTS TRIALS [VAR=VALUE...]   (tests/cluster/recovery_point_test.sh's RECOVERY_* choices)
# Prints the test's summary line and its failures (on stderr with what followed them); its
# whole log is $tmp/log.
prop() {
  local res=$1 n=$2; shift 2
  env "$@" RECOVERY_RESULTS="$res" RECOVERY_EXACT=0 "$root/tests/cluster/with-cluster" rbench 10.77.91 3 -- \
    "$root/tests/cluster/recovery_point_test.sh" "$dslaunch" "$n" >"$tmp/log" 2>&1 || true
  grep -E "^recovery point|FAIL" "$tmp/log" || true
  grep -A25 "^FAIL" "$tmp/log" >&2 || true  # what the job said around each failure
}
