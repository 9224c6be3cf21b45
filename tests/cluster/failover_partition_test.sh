#!/bin/bash
# A partitioned leader steps down, and its frames command nobody (issue 45,
# Done-when (c), on the netns bed with the job's own 3-member etcd).
# dslaunch runs on host 0 with that host's member, standby, agent and rank.
# Then host 0's link goes down: it is cut off from hosts 1 and 2, which keep
# their quorum. Expected:
#  - the old leader steps down once its lease's TTL has run out;
#  - a standby on host 1 or 2 takes the job over;
#  - a frame replayed from the old leader (its stamped Ping, recorded byte
#    for byte on host 0's lo), injected by a relay (fence_probe.py) into
#    host 2's agent's connection to the new leader, gets no answer, while a
#    control Ping under the new leader's token right behind it does.
# Then the link comes back. Expected:
#  - the old dslaunch learns it was deposed, says who leads, and exits 6
#    without stopping anything;
#  - the job trains on past step 10000 and ends 0: `dslaunch attach` on
#    host 1 exits 0;
#  - no save below the recovery point is written again, the members' files
#    go, and no process is left.
# Run inside tests/cluster/with-cluster with 3 nodes (which tears down).
#   failover_partition_test.sh DSLAUNCH
set -uo pipefail
DSLAUNCH=$(readlink -f "$1")
C=${DSLAUNCH_TEST_CLUSTER:?run me inside tests/cluster/with-cluster}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../test_util/preamble.sh"
. "$here/netns_lib.sh"
. "$here/failover_lib.sh"
command -v etcd >/dev/null || skip "etcd missing (scripts/install-deps installs etcd-server)"
command -v iptables >/dev/null || skip "iptables missing (the relay's redirect)"
read_cluster
work=$(mktemp -d /tmp/dsl-failover-partition.XXXXXX)
chmod 755 "$work"
link0="dsl$(basename "$C")v0a"  # host 0's veth on the bridge (scripts/netns-cluster)
relay_port=47000
pid="" attach_pid="" sniff_pid="" relay_pid=""
stop() { [ -n "$1" ] && kill -9 "$1" 2>/dev/null && wait "$1" 2>/dev/null; }
cleanup() {
  ip link set "$link0" up 2>/dev/null
  ip netns exec "${NS[2]}" iptables -t nat -F OUTPUT 2>/dev/null
  stop "$pid"; stop "$attach_pid"; stop "$sniff_pid"; stop "$relay_pid"
  if [ "$fails" -ne 0 ] && [ -n "${DSLAUNCH_TEST_KEEP:-}" ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"
unset XDG_RUNTIME_DIR  # the user's own private directory, as failover_replicas_test.sh
private_dirs() { ls -d "/run/user/$(id -u)/dslaunch" "/tmp/dslaunch-$(id -u)" 2>/dev/null; }
printf '%s slots=1\n' "${ADDR[@]:0:3}" >hostfile
dstrain_job coordinator="{replicas: 3, grace: 30s}" connect_timeout=2s >job.yaml

ip netns exec "${NS[0]}" env DSLAUNCH_STOP_GRACE=500ms "$DSLAUNCH" --save_pid --hostfile hostfile --launcher ssh \
  job.yaml >out 2>&1 &
pid=$!
ip netns exec "${NS[0]}" python3 "$here/fence_probe.py" sniff lo old.frame &
sniff_pid=$!
wait_for 60 grep -q "the agents know where the standbys wait: .*, .*, " out ||
  { cat out; fail "the standbys never announced themselves"; exit 1; }
job=$(sed -n 's/.*leads job \([0-9a-f]*\) in etcd.*/\1/p' out | head -1)
wait_for 30 test -s old.frame || { fail "no Fenced Ping of the leader's seen on host 0"; exit 1; }
sniff_pid=""

# Host 2's agent reaches every standby through the relay.
ip netns exec "${NS[2]}" python3 "$here/fence_probe.py" relay "${ADDR[2]}" "$relay_port" old.frame relay.log &
relay_pid=$!
wait_for 10 grep -qs "^listening" relay.log || { fail "the relay did not start"; exit 1; }
for a in $(grep -o "the standbys wait: .*, .*, .*" out | tail -1 | sed 's/.*wait: //; s/,//g'); do
  ip netns exec "${NS[2]}" iptables -t nat -A OUTPUT -p tcp -d "${a%:*}" --dport "${a##*:}" \
    -m mark ! --mark 0x4453 -j DNAT --to-destination "${ADDR[2]}:$relay_port" ||
    { fail "iptables cannot redirect $a in ${NS[2]}"; exit 1; }
done
wait_for 60 snapshot_on 1 200 || { cat out; fail "no snapshot of step 200 on host 1"; exit 1; }

[ -e "/tmp/$pid.deepspeed" ] || fail "no --save_pid file /tmp/$pid.deepspeed while the job runs"
# The partition: host 0, with dslaunch, cut off.
touch killed
ip link set "$link0" down
ip netns exec "${NS[1]}" "$DSLAUNCH" attach --wait 90 "$job" >attach.out 2>attach.err &
attach_pid=$!
wait_for 30 grep -q "steps down as leader of .*$job" out ||
  fail "the cut-off leader did not step down: $(grep -v "epoch\|step [0-9]" out | tail -5)"
wait_for 60 grep -q "^refused\|^ADMITTED" relay.log || fail "no replay: $(cat relay.log)"
grep -q "^refused: the old leader's Ping" relay.log || fail "the old leader's replayed frame: $(cat relay.log)"

# The link back: the old leader finds another leading and leaves it the job.
ip link set "$link0" up
deposed_pid=$pid
wait_for 60 sh -c "! kill -0 $pid 2>/dev/null" || { fail "the deposed dslaunch did not end"; kill -9 "$pid"; }
wait "$pid"
rc=$?
pid=""
[ "$rc" -eq 6 ] || fail "the deposed dslaunch exited $rc, not 6"
# What it alone used goes with it; the job's files are the new leader's.
for f in "/tmp/$deposed_pid.deepspeed" $(for d in $(private_dirs); do echo "$d/$job.etcd-tls.leader"; done); do
  [ -e "$f" ] && fail "the deposed dslaunch left $f"
done
grep -q "no longer the leader of job $job: .* leads it now (fencing token [0-9]*)" out ||
  fail "the deposed dslaunch did not say who leads: $(grep -v "epoch\|step [0-9]" out | tail -5)"

grep "steps down\|took over\|adrift\|is back\|no longer the leader\|refused a frame" out | cut -c1-240
wait "$attach_pid"
attach_rc=$?
attach_pid=""
grep -v "epoch\|step" attach.err | tail -20
[ "$attach_rc" -eq 0 ] || { cat attach.err; fail "dslaunch attach on host 1 ended $attach_rc, not the job's 0"; }
grep -q "dslaunch attach: this coordinator took job $job over from a lost one" attach.err ||
  fail "dslaunch attach did not follow the new leader"
none_rewritten_below 200
snapshot_on 1 10000 || fail "host 1 holds no snapshot of step 10000 or later: the job did not train on"
members_left() { for d in $(private_dirs); do ls "$d"; done | grep "^$job\.etcd[.-].*m[0-9]"; }
no_members_left() { ! members_left >/dev/null; }
wait_for 40 no_members_left || fail "member files left: $(members_left | tr '\n' ' ')"
stop "$relay_pid"
relay_pid=""
keep_pids() { cat "$C/pids/sshd-$1.pid"; }
wait_for 40 no_leftovers || { leftovers >/dev/null; fail "processes left in the namespaces"; }
[ "$fails" -eq 0 ]
