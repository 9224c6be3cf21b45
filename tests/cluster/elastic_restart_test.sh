#!/bin/bash
# Elastic restart over SSH: dstrain on 3 namespaces (1 rank each) checkpoints
# into a shared directory; then node 2 is lost and the job must restart on the
# 2 survivors, resume from the newest checkpoint (3 ranks -> 2) and finish.
# Run inside tests/cluster/with-cluster (which tears down).
#   elastic_restart_test.sh DSLAUNCH
# Two ways to lose the node:
#   kill:      every process in its namespace is SIGKILLed (sshd included): the
#              agent's connection closes at once;
#   partition: its link goes down: nothing closes, the coordinator hears no
#              heartbeat for heartbeat_timeout, and the cut-off agent, missing
#              the coordinator, kills its own worker.
# Prints how long each took from the loss to the restart notice and to the
# first step of the resumed run (not asserted: the machine is shared).
set -uo pipefail
DSLAUNCH=$(readlink -f "$1")
source "$(dirname "$0")/../test_util/elastic_job.sh"
C=${DSLAUNCH_TEST_CLUSTER:?run me inside tests/cluster/with-cluster}
work=$(mktemp -d /tmp/dsl-elrestart.XXXXXX)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/../test_util/preamble.sh"
. "$(dirname "$0")/netns_lib.sh"
read_cluster
name=$(basename "$C")
cd "$work"
printf '%s slots=1\n' "${ADDR[@]}" >hostfile

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
# Waits (up to $2 s) for a line matching $1 in the job's output; prints the time taken.
wait_line() {
  local start=$3
  for _ in $(seq $(($2 * 50))); do
    grep -q -- "$1" "$work/out" 2>/dev/null && { since "$start"; return 0; }
    sleep 0.02
  done
  echo "never"
  return 1
}

run_case() {  # $1 = kill | partition
  local how=$1 ckpt="$work/ckpt-$1"
  elastic_job_yaml "$ckpt" 300 2 "ssh: {strict_host_key_checking: yes}" >"$work/job.yaml"
  echo "== lose node 2 by $how"
  DSLAUNCH_STOP_GRACE=500ms "$DSLAUNCH" --hostfile hostfile --launcher ssh "$work/job.yaml" \
    >"$work/out" 2>&1 &
  local pid=$!
  for _ in $(seq 1500); do [ -e "$ckpt/step_00000300/manifest.json" ] && break; sleep 0.02; done
  [ -e "$ckpt/step_00000300/manifest.json" ] || { fail "$how: no checkpoint within 30 s"; cat "$work/out"; kill "$pid"; wait "$pid"; return; }
  local t0
  t0=$(now)
  if [ "$how" = kill ]; then
    # The whole node at once: stopped first, so that no process of it (the
    # ssh wrapper, the agent) can react to another's death before its own.
    ip netns pids "${NS[2]}" | xargs -r kill -STOP
    ip netns pids "${NS[2]}" | xargs -r kill -9
    rm -f "$C/pids/sshd-2.pid"  # gone: teardown must not signal a reused pid
  else
    ip link set "dsl${name}v2a" down
  fi
  local notice running resumed
  notice=$(wait_line "restart 1/1: generation 1 on 2 nodes, world size 2" 30 "$t0")
  running=$(wait_line "generation 1: all 2 workers running" 30 "$t0")
  resumed=$(wait_line "resumed from" 30 "$t0")
  wait "$pid"
  local rc=$?
  cat "$work/out"
  echo "$how: loss -> restart notice ${notice} s, -> workers running ${running} s, -> resumed ${resumed} s (heartbeat_timeout 2s)"
  [ $rc -eq 0 ] || fail "$how: dslaunch exited $rc"
  grep -q "restart 1/1: generation 1 on 2 nodes, world size 2, after host ${ADDR[2]}: agent lost" "$work/out" ||
    fail "$how: no restart notice naming ${ADDR[2]}"
  grep -q "saved by 3 ranks at ZeRO stage 2" "$work/out" || fail "$how: did not resume a 3-rank checkpoint"
  grep -q "all 2 workers exited 0, after 1 restart" "$work/out" || fail "$how: no success summary"
  [ -e "$ckpt/step_00006000/manifest.json" ] || fail "$how: the last checkpoint is missing"
  # The lost node's agent and worker are gone (cut off, the agent kills its
  # worker and quits once it misses the coordinator for heartbeat_timeout).
  local left=""
  for _ in $(seq 250); do
    left=$(ip netns pids "${NS[2]}" | xargs -r ps -o pid=,comm= -p | grep -E "dsagent|dstrain")
    [ -z "$left" ] && break
    sleep 0.04
  done
  [ -z "$left" ] || fail "$how: left in ${NS[2]} after 10 s: $left"
  if [ "$how" = partition ]; then
    grep -q "no heartbeat for 2s" "$work/out" || fail "partition: not detected by the heartbeat timeout"
    ip link set "dsl${name}v2a" up
    link_back_for_node 2
  fi
}

# After a partition node $1's neighbour entries for the others are FAILED, and
# its next connect can fail with "No route to host" (a worker of the next case
# did, and used up the restart budget): flush them and wait until node $1
# reaches every other node's sshd again.
link_back_for_node() {
  local n=$1 i
  ip -n "${NS[$n]}" neigh flush all
  for i in "${!ADDR[@]}"; do
    [ "$i" = "$n" ] && continue
    for _ in $(seq 250); do
      ip netns exec "${NS[$n]}" timeout 1 bash -c "exec 3<>/dev/tcp/${ADDR[$i]}/22" 2>/dev/null && break
      sleep 0.04
    done
    ip netns exec "${NS[$n]}" timeout 1 bash -c "exec 3<>/dev/tcp/${ADDR[$i]}/22" 2>/dev/null ||
      fail "node $n cannot reach ${ADDR[$i]} after its link came back"
  done
}

run_case partition
run_case kill
[ $fails -eq 0 ] && echo "elastic restart: all checks passed"
exit $((fails > 0))
