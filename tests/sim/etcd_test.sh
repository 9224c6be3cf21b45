#!/bin/bash
# dssim --etcd (bench/failover_scale's instrument): the real coordinator of
# 512 simulated agents leads the job in a loopback etcd and writes its state
# there at every transition, fenced, as with coordinator failover. Expected:
# every check of the scenario passes as without etcd (rendezvous, a silent
# and a dead agent found, two restarts, the end); each generation and the
# end were offered, but the burst of 512 registrations was not 512 values
# (JobControl looks at its state at most every 50 ms); the last write
# landed: the state in etcd is the job's end.
#   etcd_test.sh DSSIM
set -uo pipefail
DSSIM=$(readlink -f "$1")
. "$(dirname "$0")/../test_util/preamble.sh"
. "$(dirname "$0")/../test_util/site_etcd.sh"
command -v etcd >/dev/null || skip "etcd missing (scripts/install-deps installs etcd-server)"
work=$(mktemp -d /tmp/dsl-sim-etcd.XXXXXX)
etcd_pid=""
cleanup() {
  [ -n "$etcd_pid" ] && kill "$etcd_pid" 2>/dev/null && wait "$etcd_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
start_site_etcd "$work" || { cat "$work/etcd.log" >&2; fail "etcd did not start"; exit 1; }

"$DSSIM" --agents 512 --heartbeat-interval 0.2 --heartbeat-timeout 1 --steady 0.2 --step-timeout 40 \
  --etcd "$etcd_url" --json "$work/r.json" >"$work/out" 2>&1
rc=$?
cat "$work/out"
[ "$rc" -eq 0 ] || fail "dssim --etcd exited $rc"
read -r offered written bytes < <(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(r["states_offered"], r["etcd_writes"], r["state_bytes"])' "$work/r.json")
[ "$offered" -ge 4 ] || fail "$offered states offered for 3 generations and the end"
[ "$offered" -lt 128 ] || fail "$offered states offered: the registrations' burst was not coalesced"
[ "$written" -ge 1 ] && [ "$written" -le "$offered" ] || fail "$written writes of $offered states"
[ "$bytes" -gt 512 ] || fail "the last state is $bytes bytes for 512 candidates"
state=$(ETCDCTL_API=3 etcdctl --endpoints "$etcd_url" get --print-value-only /dslaunch/dssim/state 2>&1)
grep -q '"phase":"done"' <<<"$state" || fail "etcd's state is not the job's end: ${state:0:200}"
[ "${#state}" -eq "$bytes" ] || fail "etcd holds ${#state} bytes, the last state offered was $bytes"
[ "$fails" -eq 0 ]
