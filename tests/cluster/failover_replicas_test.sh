#!/bin/bash
# Coordinator failover with the job's own etcd (issue 45, Done-when (a) and
# (b) on the netns bed): coordinator: {replicas: 3} makes the run start a
# standby on each of the 3 hosts over real ssh, each running that host's
# etcd member (TLS from the job's CA). Then dslaunch is SIGKILLed and, at
# the same time, every process of host 0 but its sshd: a rank, a standby
# and an etcd member. Expected: the 2 members left keep a quorum, host 1's
# or host 2's standby takes the job over, it restarts on hosts 1 and 2 from
# the recovery point (no save below it written again), trains past step
# 10000 and ends 0 (the standby's record, `dslaunch status --all`); a
# `dslaunch attach` started on host 1 right after the loss follows it to
# that end and exits 0; the members' files are gone but the killed run's
# own certificate directory, and no process is left.
# Run inside tests/cluster/with-cluster with 3 nodes (which tears down).
#   failover_replicas_test.sh DSLAUNCH
set -uo pipefail
DSLAUNCH=$(readlink -f "$1")
C=${DSLAUNCH_TEST_CLUSTER:?run me inside tests/cluster/with-cluster}
. "$(dirname "$0")/../test_util/preamble.sh"
. "$(dirname "$0")/netns_lib.sh"
. "$(dirname "$0")/failover_lib.sh"
command -v etcd >/dev/null || skip "etcd missing (scripts/install-deps installs etcd-server)"
read_cluster
work=$(mktemp -d /tmp/dsl-failover-replicas.XXXXXX)
chmod 755 "$work"
pid="" attach_pid=""
cleanup() {
  [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  [ -n "$attach_pid" ] && kill -9 "$attach_pid" 2>/dev/null && wait "$attach_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
# The user's own private directory (the standbys and agents over ssh use it too), as failover_test.sh.
unset XDG_RUNTIME_DIR
private_dirs() { ls -d "/run/user/$(id -u)/dslaunch" "/tmp/dslaunch-$(id -u)" 2>/dev/null; }
printf '%s slots=1\n' "${ADDR[@]:0:3}" >hostfile
failover_job "{replicas: 3, grace: 10s}" >job.yaml

DSLAUNCH_STOP_GRACE=500ms "$DSLAUNCH" --hostfile hostfile --launcher ssh job.yaml >out 2>&1 &
pid=$!
wait_for 60 grep -q "the agents know where the standbys wait: .*, .*, " out || { cat out; fail "the standbys never announced themselves"; exit 1; }
grep -q "leads job [0-9a-f]* in etcd (https://${ADDR[0]}:[0-9]*, https://${ADDR[1]}:[0-9]*, https://${ADDR[2]}:" out ||
  { cat out; fail "the run does not lead in the job's own 3 members"; }
wait_for 60 snapshot_on 1 200 || { cat out; fail "no snapshot of step 200 on host 1"; exit 1; }
job=$(sed -n 's/.*leads job \([0-9a-f]*\) in etcd.*/\1/p' out | head -1)
pgrep -f "/$job.etcd.m0" >/dev/null || fail "no etcd member m0 runs"

# The coordinator's host: dslaunch and every process of host 0 but its sshd, at once.
sshd=$(cat "$C/pids/sshd-0.pid")
victims=$(ip netns pids "${NS[0]}" | grep -vx "$sshd")
echo "$victims" | xargs -r kill -STOP
touch killed
kill -9 "$pid"
echo "$victims" | xargs -r kill -9
wait "$pid" 2>/dev/null
pid=""
ip netns exec "${NS[1]}" "$DSLAUNCH" attach --wait 60 "$job" >attach.out 2>attach.err &
attach_pid=$!

wait "$attach_pid"
attach_rc=$?
attach_pid=""
grep -v "epoch\|step" out | tail -30
[ "$attach_rc" -eq 0 ] || { cat attach.err; fail "dslaunch attach on host 1 ended $attach_rc, not the job's 0"; }
grep -q "dslaunch attach: this coordinator took job $job over from a lost one" attach.err ||
  { cat attach.err; fail "dslaunch attach did not follow the new leader"; }
grep -q "all 2 workers exited 0, after 1 restart" attach.err || { cat attach.err; fail "no summary of a restart on 2 hosts"; }
grep -q "restart 1/1: generation 1 on 2 nodes, world size 2, after the coordinator failover (${ADDR[0]} did not come back)" attach.err ||
  { grep -v "epoch\|step" attach.err | head -20; fail "the restart attach was told of did not name host 0"; }
none_rewritten_below 200  # from the recovery point, not from scratch
snapshot_on 1 10000 || fail "host 1 holds no snapshot of step 10000 or later: the job did not train on after the loss"
wait_for 10 sh -c "'$DSLAUNCH' status --all | grep '^$job ' | grep -q ' ended  *0 '" ||
  fail "no job record of $job ending 0: $("$DSLAUNCH" status --all | grep "^$job ")"
# The members on hosts 1 and 2 took their files with them; host 0's were SIGKILLed with it. (A
# standby whose member lost its quorum as the others ended gives up after the grace, 10 s.)
members_left() { for d in $(private_dirs); do ls "$d"; done | grep "^$job\.etcd[.-].*m[12]"; }
no_members_left() { ! members_left >/dev/null; }
wait_for 40 no_members_left ||
  fail "member files left: $(members_left | tr '\n' ' ')"

keep_pids() { cat "$C/pids/sshd-$1.pid"; }
wait_for 30 no_leftovers || { leftovers >/dev/null; fail "processes left in the namespaces"; }
[ "$fails" -eq 0 ]
