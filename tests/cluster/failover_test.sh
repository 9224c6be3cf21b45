#!/bin/bash
# Coordinator failover across hosts (issue 45) on the netns cluster with
# real ssh, agents and dstrain, one slot per host, snapshots on (each host
# its own checkpoint directory). A site etcd runs on the bridge's host side;
# the job file asks for coordinator.standbys: 2, so the run starts a standby
# coordinator on hosts 0 and 1 over ssh. Then the coordinator's host is lost
# the hardest way the bed allows: dslaunch SIGKILLed and, at the same time,
# every process of host 0 (which ran a rank and a standby) but its sshd.
# Expected: host 1's standby leads the job (etcd's leader key is its), host
# 0's agent does not come back, so the generation fails into the ordinary
# restart on hosts 1 and 2 from the recovery point (etcd's state: generation
# 1, one restart spent, on candidates 1 and 2; no save below the recovery
# point written again after the loss), the job trains to its end and
# ends 0 (the standby's job record, read by `dslaunch status --all`), and
# the standby takes its keys with it. `dslaunch attach JOB`, started on host
# 1 right after the loss, follows the new leader to the job's end and exits 0.
# Run inside tests/cluster/with-cluster with 3 nodes (which tears down).
#   failover_test.sh DSLAUNCH
set -uo pipefail
DSLAUNCH=$(readlink -f "$1")
C=${DSLAUNCH_TEST_CLUSTER:?run me inside tests/cluster/with-cluster}
. "$(dirname "$0")/../test_util/preamble.sh"
. "$(dirname "$0")/netns_lib.sh"
. "$(dirname "$0")/failover_lib.sh"
command -v etcd >/dev/null || skip "etcd missing (scripts/install-deps installs etcd-server)"
read_cluster
work=$(mktemp -d /tmp/dsl-failover.XXXXXX)
chmod 755 "$work"
etcd_pid="" pid="" attach_pid=""
cleanup() {
  [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  [ -n "$attach_pid" ] && kill -9 "$attach_pid" 2>/dev/null && wait "$attach_pid" 2>/dev/null
  [ -n "$etcd_pid" ] && kill "$etcd_pid" 2>/dev/null && wait "$etcd_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
gw=$(ip -n "${NS[0]}" route show default | awk '{print $3}')
. "$(dirname "$0")/../test_util/site_etcd.sh"
start_site_etcd "$work" "$gw" || { cat "$work/etcd.log" >&2; fail "etcd did not start"; exit 1; }
ctl() { ETCDCTL_API=3 etcdctl --endpoints "$etcd_url" "$@"; }
wait_for 20 ctl endpoint health >/dev/null 2>&1 || { cat "$work/etcd.log" >&2; fail "etcd did not start"; exit 1; }

cd "$work"
printf '%s slots=1\n' "${ADDR[@]:0:3}" >hostfile
dstrain_job coordinator="{etcd: [$etcd_url], standbys: 2, grace: 30s}" connect_timeout=2s >job.yaml
state() { ctl get --print-value-only --prefix /dslaunch/ | grep '"version"'; }
leader() { ctl get --print-value-only --prefix /dslaunch/ --keys-only | grep -c '/leader$'; }

env -u XDG_RUNTIME_DIR DSLAUNCH_STOP_GRACE=500ms "$DSLAUNCH" --hostfile hostfile --launcher ssh job.yaml >out 2>&1 &
pid=$!
wait_for 60 grep -q "the agents know where the standbys wait: .*, " out || { cat out; fail "the standbys never announced themselves"; exit 1; }
wait_for 60 snapshot_on 1 200 || { cat out; fail "no snapshot of step 200 on host 1"; exit 1; }
job=$(sed -n 's/.*leads job \([0-9a-f]*\) in etcd.*/\1/p' out | head -1)
before=$(state)

# The coordinator's host: dslaunch and every process of host 0 but its sshd, at once.
sshd=$(cat "$C/pids/sshd-0.pid")
victims=$(ip netns pids "${NS[0]}" | grep -vx "$sshd")
echo "$victims" | xargs -r kill -STOP
touch killed
kill -9 "$pid"
echo "$victims" | xargs -r kill -9
wait "$pid" 2>/dev/null
pid=""
# Attach from another host of the job while it has no leader.
ip netns exec "${NS[1]}" env -u XDG_RUNTIME_DIR "$DSLAUNCH" attach --wait 60 "$job" >attach.out 2>attach.err &
attach_pid=$!

# Host 1's standby leads, the job restarts on hosts 1 and 2, trains to its end.
wait_for 30 sh -c "ETCDCTL_API=3 etcdctl --endpoints $etcd_url get --print-value-only /dslaunch/$job/leader | grep -q '${ADDR[1]}:'" ||
  fail "host 1's standby never led (leader: $(ctl get --print-value-only /dslaunch/$job/leader))"
wait_for 60 sh -c "ETCDCTL_API=3 etcdctl --endpoints $etcd_url get --print-value-only /dslaunch/$job/state | grep -q '\"generation\":1'" ||
  fail "no generation 1 after the loss (state: $(state))"
wait_for 120 sh -c "ETCDCTL_API=3 etcdctl --endpoints $etcd_url get --print-value-only /dslaunch/$job/state | grep -q '\"phase\":\"done\"'" ||
  fail "the job did not end under the standby (state: $(state))"
wait "$attach_pid"
attach_rc=$?
attach_pid=""
[ "$attach_rc" -eq 0 ] || { cat attach.err; fail "dslaunch attach on host 1 ended $attach_rc, not the job's 0"; }
grep -q "dslaunch attach: this coordinator took job $job over from a lost one" attach.err ||
  { cat attach.err; fail "dslaunch attach did not follow the new leader"; }
grep -q "all 2 workers exited 0, after 1 restart" attach.err || { cat attach.err; fail "dslaunch attach showed no summary"; }
grep -q "^${ADDR[1]}:[0-9] .*step" attach.out || { head attach.out; fail "dslaunch attach showed no training line of host 1"; }
final=$(state)
echo "state before the loss: $before"
echo "state at the end:      $final"
echo "$final" | grep -q '"generation_nodes":\[1,2\]' || fail "the restart was not on hosts 1 and 2: $final"
echo "$final" | grep -q '"restarts":1' || fail "not one restart spent: $final"
none_rewritten_below 200  # from the recovery point, not from scratch
snapshot_on 1 10000 || fail "host 1 holds no snapshot of step 10000 or later: the job did not train on after the loss"
# The standby's own record (its private directory on the shared file system): exit 0.
wait_for 10 sh -c "env -u XDG_RUNTIME_DIR '$DSLAUNCH' status --all | grep '^$job ' | grep -q ' ended  *0 '" ||
  fail "no job record of $job ending 0: $(env -u XDG_RUNTIME_DIR "$DSLAUNCH" status --all | grep "^$job ")"
wait_for 20 sh -c "[ \"\$(ETCDCTL_API=3 etcdctl --endpoints $etcd_url get --prefix /dslaunch/$job/ --keys-only | grep -c .)\" = 1 ]" ||
  fail "keys left besides the state: $(ctl get --prefix /dslaunch/"$job"/ --keys-only | tr '\n' ' ')"

keep_pids() { cat "$C/pids/sshd-$1.pid"; }
wait_for 20 no_leftovers || { leftovers >/dev/null; fail "processes left in the namespaces"; }
[ "$fails" -eq 0 ]
