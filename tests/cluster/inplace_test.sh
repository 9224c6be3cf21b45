#!/bin/bash
# In-place recovery (issue 27, elastic.in_place) on the netns cluster with
# real ssh, agents and dstrain, one slot per host, snapshots on (each host
# its own checkpoint directory, replicas to the next host).
# Run inside tests/cluster/with-cluster with 3 nodes (which tears down).
#   inplace_test.sh DSLAUNCH
# Cases, each: the job finishes (exit 0) and says what happened:
#   crash      one worker SIGKILLed: its rank restarts alone on its node, the
#              others roll back in place (`recovered in place at step S`);
#   kill       a whole host SIGKILLed: its rank is dropped, the two
#              survivors go on in place at world size 2, its shard from a replica;
#   partition  a host's link goes down: the same once its heartbeat is missed;
#   second     two workers SIGKILLed at once: the recovery of the first
#              fails and says why, and the job restarts every worker.
# Exactness (item 5): after crash/kill/partition, the saves newer than S are
# deleted and a plain run (in_place off) resumes from S, at the recovered
# world size: its loss lines after S and its test accuracy equal the
# recovered run's.
set -uo pipefail
DSLAUNCH=$(readlink -f "$1")
C=${DSLAUNCH_TEST_CLUSTER:?run me inside tests/cluster/with-cluster}
work=$(mktemp -d /tmp/dsl-inplace.XXXXXX)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/../test_util/preamble.sh"
. "$(dirname "$0")/netns_lib.sh"
. "$(dirname "$0")/dstrain_job.sh"
read_cluster
name=$(basename "$C")
cd "$work"

# job_yaml IN_PLACE: 1500 steps, a snapshot every 50; a task slow enough to
# learn that its losses (4 decimals, every 50 steps) tell two runs apart.
job_yaml() { dstrain_job in_place="$1" restarts=2 min_nodes=1 steps=1500; }
hostfile() { printf '%s slots=1\n' "${ADDR[@]:0:$1}" >"$work/hostfile"; }

run() {  # NAME: dslaunch in the background, output in $work/NAME.out
  DSLAUNCH_STOP_GRACE=500ms "$DSLAUNCH" --hostfile "$work/hostfile" --launcher ssh "$work/job.yaml" \
    >"$work/$1.out" 2>&1 &
  pid=$!
}
finish() {  # NAME: waits for dslaunch (60 s at most), prints its output
  local i
  for i in $(seq 3000); do kill -0 "$pid" 2>/dev/null || break; sleep 0.02; done
  kill -0 "$pid" 2>/dev/null && { fail "$1: still running after 60 s"; kill -INT "$pid"; }
  wait "$pid"
  local rc=$?
  echo "---- $1"; cat "$work/$1.out"
  [ $rc -eq 0 ] || fail "$1: dslaunch exited $rc"
}
# Waits (30 s at most) for host i's own shard of a step >= $2 on its disk.
wait_snapshot() {
  local i
  for i in $(seq 1500); do
    for f in "$work/ckpt-${ADDR[$1]}"/step_*/shard_"$1".held; do
      [ -e "$f" ] || continue
      local s=${f#*step_}; s=$((10#${s%%.*}))
      [ "$s" -ge "$2" ] && return 0
    done
    sleep 0.02
  done
  fail "no snapshot of step >= $2 on host $1 within 30 s"; return 1
}
worker_pid() { ip netns pids "${NS[$1]}" | xargs -r ps -o pid=,comm= -p | awk '$2 == "dstrain" {print $1}'; }
recovered_step() { sed -n 's/.*recovered in place at step \([0-9]*\) in .*/\1/p' "$work/$1.out" | head -1; }
# losses_after NAME STEP: rank 0's losses of steps > STEP, each step's last
# printed (the steps trained again after the rollback come after those of
# the world before the fault). Not "the lines after the notice": the
# coordinator's "recovered in place" may come after rank 0's next steps.
losses_after() {
  awk -v s="$2" '
    match($0, / step [0-9]+\//) {
      k = substr($0, RSTART + 6, RLENGTH - 7) + 0
      if (k > s && match($0, / loss [0-9.]+/)) got[k] = substr($0, RSTART + 6, RLENGTH - 6)
    }
    END { for (k in got) print k, got[k] }' "$work/$1.out" | sort -n
}
accuracy() { sed -n 's/.*\(test accuracy [0-9.]*, test loss [0-9.]*\).*/\1/p' "$work/$1.out" | tail -1; }

# exact NAME STEP HOSTS: the saves newer than STEP go; a plain run on HOSTS
# hosts resumes from STEP and must end where NAME did.
exact() {
  local d f s
  for d in "$work"/ckpt-*; do
    for f in "$d"/step_*; do
      [ -e "$f" ] || continue
      s=${f##*/step_}; s=$((10#${s%%.*}))
      [ "$s" -gt "$2" ] && rm -rf "$f"
    done
  done
  hostfile "$3"
  job_yaml false >"$work/job.yaml"
  run "$1-ref"; finish "$1-ref"
  grep -q "resuming from step $2 of an earlier run" "$work/$1-ref.out" || fail "$1: the reference did not resume from step $2"
  local got want
  got=$(losses_after "$1" "$2") want=$(losses_after "$1-ref" "$2")
  [ -n "$got" ] || fail "$1: no loss line after step $2"
  [ "$got" = "$want" ] ||
    fail "$1: the losses after step $2 differ from a run resumed from it: $(echo $got) vs $(echo $want)"
  [ -n "$(accuracy "$1")" ] && [ "$(accuracy "$1")" = "$(accuracy "$1-ref")" ] ||
    fail "$1: '$(accuracy "$1")' after the recovery, '$(accuracy "$1-ref")' resumed from step $2"
  echo "$1: from step $2 on, equal to a run resumed from it: $(echo "$got" | wc -l) losses, $(accuracy "$1")"
}

start_case() {  # NAME: a fresh in-place job on the three hosts, running past a snapshot of step 300
  echo "== $1"
  rm -rf "$work"/ckpt-*
  hostfile 3
  job_yaml true >"$work/job.yaml"
  run "$1"
  wait_snapshot 0 300 && wait_snapshot 1 300 && wait_snapshot 2 300
}

# crash: one worker
start_case crash
kill -9 $(worker_pid 1)
finish crash
grep -q "recovered in place at step [0-9]* in [0-9]* ms: 3 shards from memory$" "$work/crash.out" ||
  fail "crash: no in-place recovery line with every shard from memory"
grep -q "restarting every worker\|restart 1/" "$work/crash.out" && fail "crash: a full restart"
s=$(recovered_step crash); [ -n "$s" ] && exact crash "$s" 3

# kill: a whole host (every process of its namespace but its sshd)
start_case kill
sshd=$(cat "$C/pids/sshd-2.pid")
pids=$(ip netns pids "${NS[2]}" | grep -vx "$sshd")
echo "$pids" | xargs -r kill -STOP
echo "$pids" | xargs -r kill -9
finish kill
grep -q "recovered in place at step [0-9]* in [0-9]* ms: .*1 from ${ADDR[0]}'s replica of ${ADDR[2]}" "$work/kill.out" ||
  fail "kill: no in-place recovery line with the lost shard from ${ADDR[0]}'s replica"
grep -q "restarting every worker" "$work/kill.out" && fail "kill: fell back"
s=$(recovered_step kill); [ -n "$s" ] && exact kill "$s" 2

# partition: host 2's link goes down
start_case partition
ip link set "dsl${name}v2a" down
finish partition
ip link set "dsl${name}v2a" up
ip -n "${NS[2]}" neigh flush all
grep -q "recovered in place at step [0-9]* in [0-9]* ms: .*1 from ${ADDR[0]}'s replica of ${ADDR[2]}" "$work/partition.out" ||
  fail "partition: no in-place recovery line"
s=$(recovered_step partition); [ -n "$s" ] && exact partition "$s" 2
for i in $(seq 250); do
  left=$(ip netns pids "${NS[2]}" | xargs -r ps -o pid=,comm= -p | grep -E "dsagent|dstrain")
  [ -z "$left" ] && break
  sleep 0.04
done
[ -z "$left" ] || fail "partition: left in ${NS[2]} after 10 s: $left"

# second: two workers at once; the first one's recovery meets the second
start_case second
kill -9 $(worker_pid 1) $(worker_pid 2)
finish second
grep -q "in-place recovery of generation 1 failed: .*; restarting every worker" "$work/second.out" ||
  fail "second: no line saying why the in-place recovery failed"
grep -q "restart 1/2: generation 2" "$work/second.out" || fail "second: no full restart"

echo "inplace: $fails failure(s)"
[ "$fails" -eq 0 ]
