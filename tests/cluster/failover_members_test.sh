#!/bin/bash
# A lost member of the job's own etcd is replaced (launcher/cmd/member_keeper.h):
# coordinator: {replicas: 3} on 4 hosts over real ssh, dslaunch outside them.
#  1. Every process of host 1 but its sshd (a rank, its standby, member m1)
#     SIGKILLed at once. Expected: the job restarts on the survivors, and
#     the leader removes m1 from the job's etcd and starts m3 (and its
#     standby) on host 3, the one host with no member.
#  2. Then host 2 (member m2) the same way. Expected: m0 and m3 of 3 keep a
#     quorum, so the leader keeps its lease (no "no longer the leader", no
#     exit 6); it says no host is left for another member (hosts 1 and 2
#     lost theirs), the job restarts on the others (a lost host whose sshd
#     stayed rejoins as a node), trains to its end and ends 0. The survivors' member
#     files go, and no process is left. Without the replacement the second
#     loss leaves m0 alone, and the job ends 6 about 15 s later.
# Run inside tests/cluster/with-cluster with 4 nodes (which tears down).
#   failover_members_test.sh DSLAUNCH
set -uo pipefail
DSLAUNCH=$(readlink -f "$1")
C=${DSLAUNCH_TEST_CLUSTER:?run me inside tests/cluster/with-cluster}
. "$(dirname "$0")/../test_util/preamble.sh"
. "$(dirname "$0")/netns_lib.sh"
. "$(dirname "$0")/failover_lib.sh"
command -v etcd >/dev/null || skip "etcd missing (scripts/install-deps installs etcd-server)"
read_cluster
[ "${#ADDR[@]}" -ge 4 ] || { fail "needs 4 hosts, the cluster has ${#ADDR[@]}"; exit 1; }
work=$(mktemp -d /tmp/dsl-failover-members.XXXXXX)
chmod 755 "$work"
pid=""
cleanup() {
  [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
unset XDG_RUNTIME_DIR  # the user's own private directory, as the standbys over ssh use it
private_dirs() { ls -d "/run/user/$(id -u)/dslaunch" "/tmp/dslaunch-$(id -u)" 2>/dev/null; }
printf '%s slots=1\n' "${ADDR[@]:0:4}" >hostfile
dstrain_job coordinator="{replicas: 3, grace: 10s}" steps=60000 restarts=2 connect_timeout=2s >job.yaml

DSLAUNCH_STOP_GRACE=500ms "$DSLAUNCH" --hostfile hostfile --launcher ssh job.yaml >out 2>&1 &
pid=$!
wait_for 60 grep -q "the agents know where the standbys wait: .*, .*, " out || { cat out; fail "the standbys never announced themselves"; exit 1; }
job=$(sed -n 's/.*leads job \([0-9a-f]*\) in etcd.*/\1/p' out | head -1)
wait_for 60 snapshot_on 1 200 || { cat out; fail "no snapshot of step 200 on host 1"; exit 1; }

lose_host() {  # every process of host $1 but its sshd, at once
  local sshd victims
  sshd=$(cat "$C/pids/sshd-$1.pid")
  victims=$(ip netns pids "${NS[$1]}" | grep -vx "$sshd")
  echo "$victims" | xargs -r kill -STOP
  echo "$victims" | xargs -r kill -9
}
lose_host 1
t1=$(date +%s)
wait_for 60 grep -q "m3 on ${ADDR[3]} replaces it" out ||
  { grep -v "epoch\|step" out | tail -20; fail "m1 was not replaced on host 3"; exit 1; }
grep -q "coordinator.replicas: member m1 (https://${ADDR[1]}:" out || fail "the replacement does not name m1 on host 1"
echo "m1 replaced $(( $(date +%s) - t1 )) s after its host was lost"
wait_for 60 grep -q "resuming from step" out || { grep -v "epoch\|step" out | tail -20; fail "no restart after host 1"; exit 1; }
kill -0 "$pid" 2>/dev/null || { cat out; fail "the job ended before the second loss"; exit 1; }

lose_host 2
wait_for 60 grep -q "no host of the job is left to run another" out ||
  { grep -v "epoch\|step" out | tail -20; fail "the leader did not say that no host is left for m2"; }
wait "$pid"
rc=$?
pid=""
grep -v "epoch\|step" out | tail -25
grep "coordinator.replicas: member" out  # the leader's lines (bench/failover_members reads them)
[ "$rc" -eq 0 ] || fail "dslaunch exited $rc after the second member loss, not 0"
grep -q "no longer the leader" out && fail "the leader was deposed"
grep -Eq "all [23] workers exited 0, after 2 restarts" out || fail "no summary of the workers ending 0 after 2 restarts"
members_left() { for d in $(private_dirs); do ls "$d"; done | grep "^$job\.etcd[.-].*m[03]"; }
no_members_left() { ! members_left >/dev/null; }
wait_for 30 no_members_left || fail "member files of m0 or m3 left: $(members_left | tr '\n' ' ')"
keep_pids() { cat "$C/pids/sshd-$1.pid"; }
wait_for 30 no_leftovers || { leftovers >/dev/null; fail "processes left in the namespaces"; }
[ "$fails" -eq 0 ]
