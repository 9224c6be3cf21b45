#!/bin/bash
# Coordinator failover with the job's own etcd (issue 45, Done-when (a) and
# (b) on the netns bed): coordinator: {replicas: 3} makes the run start a
# standby on each of the 3 hosts over real ssh, each running that host's
# etcd member (TLS from the job's CA).
#  (a) dslaunch alone is SIGKILLed mid-training. Expected: a standby takes
#      the generation over as it runs; 10 s later and 500 steps on, the
#      same worker processes train on every host; `dslaunch attach` on
#      host 1, started right after the loss, follows it.
#  (b) Then every process of the new leader's host but its sshd (a rank, the
#      leading standby, an etcd member) is SIGKILLed at once. Expected: the
#      2 members left keep a quorum, the last standby takes the job over and
#      (elastic.in_place) recovers the other two hosts' workers in place,
#      the same processes, from the recovery point (no save below it
#      written again; their store is the new leader's now), it trains past
#      step 10000 and ends 0 (the standby's record, `dslaunch status
#      --all`), and the attach follows it to that end and exits 0. The
#      survivors' member files go, and no process is left.
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
dstrain_job coordinator="{replicas: 3, grace: 10s}" steps=60000 connect_timeout=2s in_place=true >job.yaml  # long enough for two failovers

DSLAUNCH_STOP_GRACE=500ms "$DSLAUNCH" --hostfile hostfile --launcher ssh job.yaml >out 2>&1 &
pid=$!
wait_for 60 grep -q "the agents know where the standbys wait: .*, .*, " out || { cat out; fail "the standbys never announced themselves"; exit 1; }
grep -q "leads job [0-9a-f]* in etcd (https://${ADDR[0]}:[0-9]*, https://${ADDR[1]}:[0-9]*, https://${ADDR[2]}:" out ||
  { cat out; fail "the run does not lead in the job's own 3 members"; }
wait_for 60 snapshot_on 1 200 || { cat out; fail "no snapshot of step 200 on host 1"; exit 1; }
job=$(sed -n 's/.*leads job \([0-9a-f]*\) in etcd.*/\1/p' out | head -1)
pgrep -f "/$job.etcd.m0" >/dev/null || fail "no etcd member m0 runs"

# (a) dslaunch alone.
worker_pid() { ip netns pids "${NS[$1]}" | xargs -r ps -o pid=,comm= -p 2>/dev/null | awk '$2 == "dstrain" {print $1}'; }
workers_before="$(worker_pid 0) $(worker_pid 1) $(worker_pid 2)"
kill -9 "$pid"
wait "$pid" 2>/dev/null
pid=""
t_loss=$(date +%s)
ip netns exec "${NS[1]}" "$DSLAUNCH" attach --wait 90 "$job" >attach.out 2>attach.err &
attach_pid=$!
wait_for 60 grep -q "took over generation 0: its 3 worker(s) on 3 node(s) ran on, none restarted" attach.err ||
  { cat attach.err; fail "no standby took generation 0 over as it ran"; }
step_at() { local f s m=0; for f in "$work/ckpt-${ADDR[1]}"/step_*/shard_1.held; do [ -e "$f" ] || continue
  s=${f#*step_}; s=$((10#${s%%.*})); [ "$s" -gt "$m" ] && m=$s; done; echo $m; }
taken=$(step_at)
trained_on() { [ "$(date +%s)" -ge $((t_loss + 10)) ] && snapshot_on 1 $((taken + 500)); }
wait_for 60 trained_on || fail "no snapshot of step $((taken + 500)) on host 1 after the takeover"
workers_after="$(worker_pid 0) $(worker_pid 1) $(worker_pid 2)"
[ "$workers_after" = "$workers_before" ] ||
  fail "the workers changed across the takeover: $workers_before -> $workers_after"

# (b) The new leader's host: every process but its sshd (and the test's attach), at once.
leader_ip=$(sed -n 's/.*following job [0-9a-f]* at \([0-9.]*\):.*/\1/p' attach.err | tail -1)
lost=-1
for i in 0 1 2; do [ "${ADDR[$i]}" = "$leader_ip" ] && lost=$i; done
[ "$lost" -ge 0 ] || { cat attach.err; fail "attach names no leader on the bed's hosts"; exit 1; }
survivors=() && for i in 0 1 2; do [ "$i" -ne "$lost" ] && survivors+=("$i"); done
survivor_workers="$(worker_pid "${survivors[0]}") $(worker_pid "${survivors[1]}")"
sshd=$(cat "$C/pids/sshd-$lost.pid")
victims=$(ip netns pids "${NS[$lost]}" | grep -vx "$sshd" | grep -vx "$attach_pid")
echo "$victims" | xargs -r kill -STOP
touch killed
echo "$victims" | xargs -r kill -9
wait_for 60 grep -q "recovered in place at step" attach.err ||
  { grep -v "epoch\|step" attach.err | tail -20; fail "the survivors were not recovered in place"; }
workers_now="$(worker_pid "${survivors[0]}") $(worker_pid "${survivors[1]}")"
[ "$workers_now" = "$survivor_workers" ] || fail "the survivors' workers changed: $survivor_workers -> $workers_now"

wait "$attach_pid"
attach_rc=$?
attach_pid=""
grep -v "epoch\|step" attach.err | tail -30
[ "$attach_rc" -eq 0 ] || { cat attach.err; fail "dslaunch attach on host 1 ended $attach_rc, not the job's 0"; }
grep -q "following job $job's new leader at" attach.err || { cat attach.err; fail "dslaunch attach did not follow the second leader"; }
grep -q "all 2 workers exited 0" attach.err || { cat attach.err; fail "no summary of 2 workers ending 0"; }
grep -q "generation 0 cannot be taken over as it runs: ${ADDR[$lost]} did not come back; its survivors recover in place" attach.err ||
  { grep -v "epoch\|step" attach.err | head -20; fail "the takeover attach was told of did not name host $lost"; }
grep -q "restart [0-9]/" attach.err && fail "a restart after the second takeover: not in place"
none_rewritten_below "$taken"  # from the recovery point, not from scratch
snapshot_on "${survivors[0]}" 10000 || fail "host ${survivors[0]} holds no snapshot of step 10000 or later: the job did not train on"
wait_for 10 sh -c "'$DSLAUNCH' status --all | grep '^$job ' | grep -q ' ended  *0 '" ||
  fail "no job record of $job ending 0: $("$DSLAUNCH" status --all | grep "^$job ")"
# The survivors' members took their files with them; the lost host's were SIGKILLed with it. (A
# standby whose member lost its quorum as the others ended gives up after the grace, 10 s.)
members_left() { for d in $(private_dirs); do ls "$d"; done | grep "^$job\.etcd[.-].*m[${survivors[0]}${survivors[1]}]"; }
no_members_left() { ! members_left >/dev/null; }
wait_for 40 no_members_left ||
  fail "member files left: $(members_left | tr '\n' ' ')"

keep_pids() { cat "$C/pids/sshd-$1.pid"; }
wait_for 30 no_leftovers || { leftovers >/dev/null; fail "processes left in the namespaces"; }
[ "$fails" -eq 0 ]
