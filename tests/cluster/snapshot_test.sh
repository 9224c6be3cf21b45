#!/bin/bash
# Checkpoints without shared storage (issue 14) on the netns cluster over
# real ssh: every host has its own checkpoint directory (ckpt-{host}), the
# agents keep the shards in memory and replicate each to the next node.
# Run inside tests/cluster/with-cluster with 4 nodes (which tears down).
#   snapshot_test.sh DSLAUNCH
# Cases:
#   zero 1/2/3  one host's job processes SIGKILLed and its directories
#               deleted mid-training: the two survivors resume at the last
#               snapshot step, end at the accuracy of an uninterrupted run
#               (within 0.3 points) with a loss that continues from there;
#   worker      one worker crashes: everyone resumes from memory;
#   standby     the lost host's place is taken by a standby, which receives
#               the shards of the step (on its own disk afterwards);
#   buddies     two neighbours lost at once (replicas: 1): their shard is
#               gone everywhere, the job says so and starts from scratch.
# "The host's job processes" are every process in its namespace but its
# listening sshd, so the namespace serves the next case.
set -uo pipefail
DSLAUNCH=$(readlink -f "$1")
C=${DSLAUNCH_TEST_CLUSTER:?run me inside tests/cluster/with-cluster}
work=$(mktemp -d /tmp/dsl-snapshot.XXXXXX)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/../test_util/preamble.sh"
. "$(dirname "$0")/netns_lib.sh"
read_cluster
cd "$work"

# job_yaml STAGE MAX_NODES
job_yaml() {
  cat <<YAML
checkpoint: {dir: "$work/ckpt-{host}", keep: 20}
elastic: {max_restarts: 2, min_nodes: 1, max_nodes: $2, heartbeat_interval: 500ms, heartbeat_timeout: 2s}
ssh: {strict_host_key_checking: yes}
env: {OMP_NUM_THREADS: '1', OPENBLAS_NUM_THREADS: '1'}
trainer:
  model: {layers: [784, 64, 10], activation: relu}
  data: {dataset: fashion-mnist}
  epochs: 3
  seed: 7
  eval: {every_epoch: false}
  checkpoint: {every_steps: 150, keep: 2}
  config:
    train_batch_size: 96
    optimizer: {type: Adam, params: {lr: 0.001}}
    zero_optimization: {stage: $1}
    steps_per_print: 75
YAML
}

# hostfile N: the first N hosts, one slot each.
hostfile() { printf '%s slots=1\n' "${ADDR[@]:0:$1}" >"$work/hostfile"; }

# Kills host i's job processes (not its listening sshd) and deletes what the
# job kept there: its checkpoint directory and its agent's memory directory.
lose_host() {
  local i=$1 sshd pids p
  sshd=$(cat "$C/pids/sshd-$i.pid")
  pids=$(ip netns pids "${NS[$i]}" | grep -vx "$sshd")
  # Stopped first: no process of it reacts to another's death before its own.
  echo "$pids" | xargs -r kill -STOP
  for p in $pids; do
    [ "$(ps -o comm= -p "$p")" = dsagent ] && rm -rf /dev/shm/dsagent-snapshots."$p".*
  done
  echo "$pids" | xargs -r kill -9
  rm -rf "$work/ckpt-${ADDR[$i]}"
}

# run NAME: dslaunch in the background, output in $work/NAME.out
run() {
  DSLAUNCH_STOP_GRACE=500ms "$DSLAUNCH" --hostfile "$work/hostfile" --launcher ssh "$work/job.yaml" \
    >"$work/$1.out" 2>&1 &
  pid=$!
}
# Waits (30 s at most) for host i's own shard of `step` on its disk (in the
# directory of its save, step_<step>.<set>).
wait_snapshot() {
  local f="$work/ckpt-${ADDR[$1]}/step_$(printf %08d "$2").*/shard_$3.held"
  for _ in $(seq 1500); do compgen -G "$f" >/dev/null && return 0; sleep 0.02; done
  fail "no $f within 30 s"; return 1
}
finish() {  # NAME: waits for dslaunch, prints its output
  wait "$pid"
  local rc=$?
  echo "---- $1"; cat "$work/$1.out"
  [ $rc -eq 0 ] || fail "$1: dslaunch exited $rc"
}
accuracy() { sed -n 's/.*test accuracy: \([0-9.]*\).*/\1/p' "$work/$1.out" | tail -1; }
loss_at() { sed -n "s/.* step $2\/[0-9]* \(epoch [0-9]*\/[0-9]* \)\{0,1\}loss \([0-9.]*\).*/\2/p" "$work/$1.out" | tail -1; }
resumed_step() { sed -n 's/.*resuming from step \([0-9]*\):.*/\1/p' "$work/$1.out" | head -1; }

for stage in 1 2 3; do
  hostfile 3
  job_yaml "$stage" 3 >"$work/job.yaml"
  rm -rf "$work"/ckpt-*
  run "ref$stage"; finish "ref$stage"
  rm -rf "$work"/ckpt-*
  run "lose$stage"
  wait_snapshot 2 300 2 && lose_host 2
  finish "lose$stage"
  s=$(resumed_step "lose$stage")
  [ -n "$s" ] && [ "$s" -ge 300 ] || fail "zero $stage: did not resume at a snapshot step (got '${s}')"
    # Host 2's replicas go to the next host in ring order: host 0.
  grep -q "resuming from step $s: 2 shards from memory, 1 from ${ADDR[0]}'s replica of ${ADDR[2]}" "$work/lose$stage.out" ||
    fail "zero $stage: the restart line does not say the lost shard came from a replica"
  grep -q "resumed from .*(step $s, saved by 3 ranks at ZeRO stage $stage)" "$work/lose$stage.out" ||
    fail "zero $stage: the workers did not load step $s"
  a=$(accuracy "ref$stage") b=$(accuracy "lose$stage")
  awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0.5 && d <= 0.003) }' ||
    fail "zero $stage: test accuracy $b after the loss, $a uninterrupted (more than 0.3 points apart)"
  # The first loss printed after the resume continues the curve (a fresh
  # model would be near 2.3).
  at=$(( (s / 75 + 1) * 75 ))
  la=$(loss_at "ref$stage" "$at") lb=$(loss_at "lose$stage" "$at")
  awk -v a="$la" -v b="$lb" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && b != "" && d <= 0.05 + 0.1 * a) }' ||
    fail "zero $stage: loss at step $at is '$lb' after the resume, '$la' uninterrupted"
  echo "zero $stage: resumed at step $s; accuracy $b (uninterrupted $a); loss at step $at $lb ($la)"
done

# A worker crash: everything is still in some node's memory.
hostfile 3
job_yaml 2 3 >"$work/job.yaml"
rm -rf "$work"/ckpt-*
run worker
if wait_snapshot 1 300 1; then
  w=$(ip netns pids "${NS[1]}" | xargs -r ps -o pid=,comm= -p | awk '$2 == "dstrain" {print $1}')
  kill -9 $w
fi
finish worker
grep -q "resuming from step [0-9]*: 3 shards from memory$" "$work/worker.out" ||
  fail "worker: the restart did not resume every shard from memory"

# A standby steps in for the lost host and receives the step's shards.
hostfile 4
job_yaml 2 3 >"$work/job.yaml"
rm -rf "$work"/ckpt-*
run standby
wait_snapshot 2 300 2 && lose_host 2
finish standby
s=$(resumed_step standby)
grep -q "restart 1/2: generation 1 on 3 nodes, world size 3" "$work/standby.out" || fail "standby: did not step in"
for r in 0 1 2; do
  compgen -G "$work/ckpt-${ADDR[3]}/step_$(printf %08d "${s:-0}").*/shard_$r.bin" >/dev/null ||
    fail "standby: shard $r of step ${s:-?} did not reach the standby's disk"
done

# Two buddies at once: shard 1 lived on hosts 1 and 2 only.
hostfile 4
job_yaml 2 4 >"$work/job.yaml"
rm -rf "$work"/ckpt-*
run buddies
if wait_snapshot 2 300 2; then
  lose_host 1 &
  l1=$!
  lose_host 2
  wait "$l1"
fi
finish buddies
grep -q "no complete snapshot or checkpoint left: starting from scratch (step [0-9]* lost shards\? .*1.* with the failed nodes)" \
  "$work/buddies.out" || fail "buddies: no message that the job starts from scratch"
grep -q "all 2 workers exited 0, after 1 restart" "$work/buddies.out" || fail "buddies: the job did not finish on 2 nodes"

[ $fails -eq 0 ] && echo "snapshots: all checks passed"
exit $((fails > 0))
