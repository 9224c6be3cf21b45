#!/bin/bash
# Gray failures on the netns bed (issue 28 item 4): one cluster of 3 nodes,
# one rank each, real jobs over SSH, several jobs on it. Run inside
# tests/cluster/with-cluster (which tears down).
#   gray_test.sh DSLAUNCH
#   healthy     dstrain runs to its end: no "slow:", no "hang:" line
#   throttled   node 2's dstrain stopped 90 ms of every 100 ms (a SIGSTOP/SIGCONT
#               duty cycle: this machine has no cgroup v2 cpu.max to use), with
#               elastic.evict_slow: node 2 is named slow, evicted, and the job
#               restarts on nodes 0 and 1
#   slow link   tc netem delay (tbf where the kernel lacks netem) on node 2's veth, with
#               elastic.evict_slow: node 2 is named by its heartbeat round trip (no rank's
#               compute time tells: all wait alike), evicted, and no healthy node is named
#   collective  rank 1's dstrain SIGSTOPped (it stops taking part in the
#               collectives): the hang is said, every rank's stacks are taken
#               before the stop, rank 1 is the odd one out, the stacks are in
#               --log-dir, and the job restarts (max_restarts 1)
#   user code   a Python worker that beats its steps (the documented datagram):
#               rank 2 spins in its own code at step 30 while the others wait
#               for it: the hang names rank 2 on node 2 and the Python line
#               each rank is at; no restart left: exit 1
# Each job is bounded: dslaunch is stopped with SIGINT once what is checked was
# seen, or at a deadline.
set -uo pipefail
DSLAUNCH=$(readlink -f "$1")
DSTRAIN=$(dirname "$DSLAUNCH")/../runtime/dstrain
C=${DSLAUNCH_TEST_CLUSTER:?run me inside tests/cluster/with-cluster}
source "$(dirname "$0")/netns_lib.sh"
work=$(mktemp -d /tmp/dsl-gray.XXXXXX)
THROTTLE=""
cleanup() {
  [ -n "$THROTTLE" ] && kill "$THROTTLE" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
. "$(dirname "$0")/../test_util/preamble.sh"
read_cluster
keep_pids() { cat "$C/pids/sshd-$1.pid"; }
cd "$work"
printf '%s slots=1\n' "${ADDR[@]}" >hostfile

# dstrain_job MAX_STEPS EXTRA_ELASTIC [MICRO_BATCH]: a job file (synthetic
# data, ZeRO 0, a checkpoint every 200 steps in a shared directory).
dstrain_job() {
  cat <<YAML
checkpoint_dir: $work/ckpt
elastic: {heartbeat_interval: 500ms, heartbeat_timeout: 3s, $2}
env: {OMP_NUM_THREADS: '1', OPENBLAS_NUM_THREADS: '1'}
trainer:
  model: {layers: [256, 256, 10], activation: relu}
  data: {dataset: synthetic, samples: 100000, features: 256, classes: 10}
  epochs: 1000
  max_steps: $1
  seed: 3
  eval: {every_epoch: false}
  checkpoint: {every_steps: 200, keep: 2}
  config:
    train_micro_batch_size_per_gpu: ${3:-32}
    optimizer: {type: Adam, params: {lr: 0.001}}
    zero_optimization: {stage: 0}
    steps_per_print: 100000
YAML
}

# start_job [OPTIONS...] JOBFILE: dslaunch in the background, output in $work/out; sets JOB.
start_job() {
  : >"$work/out"
  DSLAUNCH_STOP_GRACE=500ms "$DSLAUNCH" --hostfile hostfile --launcher ssh "$@" >"$work/out" 2>&1 &
  JOB=$!
}
seen() { grep -q -- "$1" "$work/out"; }
# end_job: SIGINT once it is still running; its exit code in RC.
end_job() {
  kill -INT "$JOB" 2>/dev/null
  wait "$JOB"
  RC=$?
}
# dstrain's pid in namespace $1 ("" while none).
worker_pid() { ip netns pids "${NS[$1]}" | xargs -r ps -o pid=,comm= -p 2>/dev/null | awk '$2 == "dstrain" {print $1; exit}'; }
has_worker() { [ -n "$(worker_pid "$1")" ]; }
stepped() { [ -e "$work/ckpt/step_00000200/manifest.json" ]; }

echo "== healthy"
dstrain_job 1500 "hang_factor: 10, hang_floor: 3s" >healthy.yaml
start_job healthy.yaml
wait "$JOB"; RC=$?
cat "$work/out"
[ $RC -eq 0 ] || fail "healthy: dslaunch exited $RC"
seen "all 3 workers exited 0" || fail "healthy: no success summary"
seen "slow: " && fail "healthy: a slow node was reported"
seen "hang: " && fail "healthy: a hang was reported"

echo "== throttled, evict_slow"
rm -rf "$work/ckpt"
# slow_factor 2.5 and a 3 s window: on this shared machine a healthy node can
# sit 1.6x above the median for 2 s, and evicting it would be the wrong node.
# Micro-batch 512: most of a step is computation, where the stops show (a stop
# during the allreduce delays every rank alike).
dstrain_job 100000 "max_restarts: 1, min_nodes: 2, evict_slow: true, evict_cooldown: 10m, slow_factor: 2.5, slow_window: 3s" 512 >throttled.yaml
start_job throttled.yaml
wait_for 60 stepped || fail "throttled: no checkpoint within 60 s"
victim=$(worker_pid 2)
( while kill -STOP "$victim" 2>/dev/null; do sleep 0.09; kill -CONT "$victim" 2>/dev/null; sleep 0.01; done ) &
THROTTLE=$!
wait_for 40 seen "generation 1: all 2 workers running" || fail "throttled: no restart on 2 nodes within 40 s"
kill "$THROTTLE" 2>/dev/null; wait "$THROTTLE" 2>/dev/null; THROTTLE=""
end_job
cat "$work/out"
seen "slow: ${ADDR[2]} (rank 2) " || fail "throttled: ${ADDR[2]} not named slow"
seen "slow: ${ADDR[0]} \|slow: ${ADDR[1]} " && fail "throttled: a healthy node was named slow"
seen "evict: ${ADDR[2]} (slow) leaves now (the job keeps no snapshots); out for 600 s" || fail "throttled: no eviction line"
seen "restart 1/1: generation 1 on 2 nodes, world size 2, after host ${ADDR[2]}: evicted as slow" ||
  fail "throttled: no restart without ${ADDR[2]}"
has_worker 2 && fail "throttled: the evicted node still runs a worker"

echo "== slowed link, evict_slow"
# node 2's veth slowed (the bridge side: every frame to node 2 waits 50 ms,
# or at most 5 Mbit/s). Every rank of a synchronous data-parallel job waits
# for it at each collective, so no rank's compute time tells; the heartbeat
# round trip to node 2 does (its Pings queue behind the job's traffic).
rm -rf "$work/ckpt"
dstrain_job 100000 "max_restarts: 1, min_nodes: 2, evict_slow: true" >link.yaml
start_job link.yaml
wait_for 60 stepped || fail "slowed link: no checkpoint within 60 s"
# netem where the kernel has it, else a token bucket at 5 Mbit/s (sch_tbf).
slowed=$(date +%s.%N)
tc qdisc add dev "dsl$(basename "$C")v2a" root netem delay 50ms 2>/dev/null ||
  tc qdisc add dev "dsl$(basename "$C")v2a" root tbf rate 5mbit burst 32kbit latency 100ms ||
  fail "slowed link: tc refused both netem and tbf"
wait_for 30 seen "slow link: " && echo "slowed link: named $(echo "$(date +%s.%N) - $slowed" | bc) s after the slowdown"
wait_for 30 seen "generation 1: all 2 workers running" || fail "slowed link: no restart on 2 nodes within 30 s"
tc qdisc del dev "dsl$(basename "$C")v2a" root 2>/dev/null
end_job
grep "slow\( link\)\?: \|evict: \|restart " "$work/out"
seen "slow link: ${ADDR[2]} heartbeat round trip " || fail "slowed link: ${ADDR[2]} not named"
seen "slow\( link\)\?: ${ADDR[0]} \|slow\( link\)\?: ${ADDR[1]} \|evict: ${ADDR[0]} \|evict: ${ADDR[1]} " &&
  fail "slowed link: a node with a healthy link was named"
seen "evict: ${ADDR[2]} (slow) leaves" || fail "slowed link: no eviction line"
has_worker 2 && fail "slowed link: the evicted node still runs a worker"

echo "== stuck in a collective"
rm -rf "$work/ckpt"
# Micro-batch 512: most of a step is computation, so rank 1 is mostly stopped outside gloo.
dstrain_job 100000 "max_restarts: 1, hang_factor: 10, hang_floor: 3s" 512 >collective.yaml
start_job --log-dir "$work/logs" collective.yaml
wait_for 60 stepped || fail "collective: no checkpoint within 60 s"
# Stopped where it computes, not inside the allreduce the others wait in
# (there its stack and step read like theirs): stopped again until eu-stack
# shows its training thread (named ds-train) outside gloo, at most 50 tries.
stop_outside_gloo() {
  local pid=$1 try tid
  for try in $(seq 50); do
    kill -STOP "$pid" || return 1
    command -v eu-stack >/dev/null || return 0
    tid=$(grep -lx ds-train /proc/"$pid"/task/*/comm 2>/dev/null | head -1 | cut -d/ -f5)
    [ -n "$tid" ] || return 1
    eu-stack -p "$pid" 2>/dev/null | awk -v t="TID $tid:" '$0 == t {p = 1; next} /^TID/ {p = 0} p' |
      grep -q "gloo::" || return 0
    kill -CONT "$pid"
  done
  return 1
}
stopped=$(worker_pid 1)
if [ -n "$stopped" ] && stop_outside_gloo "$stopped"; then
  t0=$(date +%s.%N)
  wait_for 20 seen "hang: " && t_hang=$(date +%s.%N)
  wait_for 20 seen "hang stacks" && t_stacks=$(date +%s.%N)
  wait_for 40 seen "generation 1: all 3 workers running" || fail "collective: no restart within 40 s"
  # Not asserted (the machine is shared): SIGSTOP -> the hang line -> every stack in.
  [ -n "${t_stacks:-}" ] && echo "collective: stopped -> hang said $(echo "$t_hang - $t0" | bc -l | xargs printf '%.1f') s," \
    "-> stacks reported $(echo "$t_stacks - $t_hang" | bc -l | xargs printf '%.1f') s later"
else
  fail "collective: no dstrain in ${NS[1]} (pid '$stopped'), or it was inside gloo at each of 50 stops"
fi
end_job
cat "$work/out"
seen "hang: no rank advanced for " || fail "collective: no hang line"
seen "hang stacks, generation 0 (every rank's in $work/logs/stacks.gen0.txt):" || fail "collective: no stacks notice"
seen "  rank 1 (${ADDR[1]}): in " || fail "collective: rank 1 not the odd one out"
seen "  2 others: in " || fail "collective: ranks 0 and 2 not grouped"
grep -q "^=== rank 1 (${ADDR[1]}), step [0-9]*, \(eu-stack\|gdb\) ===" "$work/logs/stacks.gen0.txt" ||
  fail "collective: rank 1's stack not in the log directory"
seen "restart 1/1: generation 1 on 3 nodes, world size 3, after host ${ADDR[1]}: hang: no rank advanced" ||
  fail "collective: no restart after the hang"

echo "== stuck in user code"
cat >stuck.py <<'PY'
import os, socket, struct, time
rank = int(os.environ["RANK"])
token = os.environ["DSLAUNCH_HEARTBEAT_TOKEN"].encode()
host, port = os.environ["DSLAUNCH_HEARTBEAT_ADDR"].rsplit(":", 1)
beats = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
def spin_in_user_code():
    while True: pass
def wait_for_peers():
    while True: time.sleep(0.05)
for step in range(1, 1000000):
    time.sleep(0.05)
    beats.sendto(struct.pack(">qq", rank, step) + token, (host, int(port)))
    if step == 30:
        spin_in_user_code() if rank == 2 else wait_for_peers()
PY
cat >user.yaml <<YAML
command: [/usr/bin/python3, $work/stuck.py]
elastic: {heartbeat_interval: 500ms, heartbeat_timeout: 3s, hang_factor: 10, hang_floor: 3s}
YAML
start_job --log-dir "$work/user-logs" user.yaml
wait_for 60 bash -c "! kill -0 $JOB 2>/dev/null" || fail "user code: dslaunch still running after 60 s"
end_job
cat "$work/out"
[ $RC -eq 1 ] || fail "user code: dslaunch exited $RC, expected 1"
# Where each is in its Python code (gdb calls CPython's faulthandler dumper: agent/stacks/python_stack.h).
command -v gdb >/dev/null || fail "user code: gdb is not installed (scripts/install-deps installs it): no Python frames"
if grep -q "gdb cannot call into a process on this kernel" "$work/user-logs/stacks.gen0.txt"; then
  # gdb 13 on a 6.18 kernel cannot call the dumper: the precondition of the Python part is missing.
  echo "SKIPPED (user code's Python frames): gdb cannot call into a process on this kernel"
  grep -q "^Native frames (\(eu-stack\|gdb\)):" "$work/user-logs/stacks.gen0.txt" ||
    fail "user code: no native frames in the log directory"
else
seen "  rank 2 (${ADDR[2]}): in stuck.py:7 in spin_in_user_code, step 30" ||
  fail "user code: rank 2 not the odd one out at step 30, in spin_in_user_code"
seen "  2 others: in stuck.py:9 in wait_for_peers, step 30" || fail "user code: ranks 0 and 1 not grouped in wait_for_peers"
sed -n "/^=== rank 2 /,/^=== /p" "$work/user-logs/stacks.gen0.txt" | grep -q "^Python frames (faulthandler's dump via gdb):" &&
  grep -q "^Native frames (\(eu-stack\|gdb\)):" "$work/user-logs/stacks.gen0.txt" ||
  fail "user code: rank 2's Python and native frames not in the log directory"
fi
wait_for 10 no_leftovers || fail "processes left in the namespaces: $(leftovers 2>&1 >/dev/null)"

[ $fails -eq 0 ] && echo "gray failures: all checks passed"
exit $((fails > 0))
