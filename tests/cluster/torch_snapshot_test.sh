#!/bin/bash
# A DDP script using dslaunch.torch (tests/torch/ddp_snapshot.py, Debian's
# torch, Gloo) on the netns cluster over real ssh, 3 nodes, 1 rank each,
# node-local snapshot folders (ckpt-{host}), no shared directory
# (issue 44): once the job publishes a recovery point, one host's every
# job process is SIGKILLed and its folders deleted. The job must resume on
# the 2 survivors at a step >= the recovery point published before the
# fault, with parameters whose checksum is the one rank 0 printed when it
# saved that step (bit for bit), and end 0.
# Run inside tests/cluster/with-cluster with 3 nodes (which tears down).
#   torch_snapshot_test.sh DSLAUNCH
set -uo pipefail
DSLAUNCH=$(readlink -f "$1")
C=${DSLAUNCH_TEST_CLUSTER:?run me inside tests/cluster/with-cluster}
here=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
"$PY" -c 'import torch.distributed' 2>/dev/null || { echo "SKIP: no torch on $PY" >&2; exit 77; }
work=$(mktemp -d /tmp/dsl-tsnap.XXXXXX)
pid=
cleanup() {
  [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
  for ns in "${NS[@]}"; do ip netns pids "$ns" | xargs -r kill -CONT 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
. "$here/netns_lib.sh"
read_cluster
keep_pids() { cat "$C/pids/sshd-$1.pid"; }
cd "$work"
cp "$here/../torch/ddp_snapshot.py" .
printf '%s slots=1\n' "${ADDR[@]}" >hostfile
cat >job.yaml <<YAML
command: [$PY, -u, $work/ddp_snapshot.py]
working_dir: $work
checkpoint: {dir: "$work/ckpt-{host}", keep: 3, replicas: 1}
elastic: {max_restarts: 2, min_nodes: 1, heartbeat_interval: 250ms, heartbeat_timeout: 1s}
ssh: {strict_host_key_checking: yes}
env: {OMP_NUM_THREADS: '1', STEPS: '100000', EVERY: '20'}
YAML
published_point() {
  "$DSLAUNCH" status --json 2>/dev/null | "$PY" -c '
import json, sys
for line in sys.stdin:
    v = json.loads(line)
    if v.get("pid") == int(sys.argv[1]): print(v.get("recovery_point_step", -1)); break
else: print(-1)' "$pid"
}
kill_host() {  # every process of host $1's namespace but its sshd, stopped first, then SIGKILLed
  local pids
  pids=$(ip netns pids "${NS[$1]}" | grep -vx "$(keep_pids "$1")")
  echo "$pids" | xargs -r kill -STOP; echo "$pids" | xargs -r kill -9
}

DSLAUNCH_STOP_GRACE=500ms "$DSLAUNCH" --hostfile hostfile --launcher ssh job.yaml >out 2>&1 &
pid=$!
point=-1
for _ in $(seq 900); do  # 90 s at most for a recovery point past step 40
  point=$(published_point); [ "$point" -ge 40 ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
[ "$point" -ge 40 ] || fail "no recovery point past step 40 within 90 s (last: $point)"
victim=2
echo "== recovery point $point: host ${ADDR[$victim]} lost"
kill_host $victim
rm -rf "$work/ckpt-${ADDR[$victim]}"
restored=
for _ in $(seq 1200); do  # 120 s at most to resume
  restored=$(sed -n 's/.*restored step=\([0-9]*\) checksum=\([0-9a-f]*\) world=\([0-9]*\).*/\1 \2 \3/p' out | head -1)
  [ -n "$restored" ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
kill -INT "$pid"; wait "$pid"; rc=$?; pid=
grep -v "saved step" out | tail -25
read -r step sum world <<<"$restored"
[ -n "$restored" ] || fail "the job did not resume from a snapshot after the node loss"
if [ -n "$restored" ]; then
  [ "$step" -ge "$point" ] || fail "resumed at step $step, before the recovery point $point published before the fault"
  [ "$world" -eq 2 ] || fail "resumed at world size $world, expected the 2 survivors"
  saved=$(sed -n "s/.*saved step=$step checksum=\([0-9a-f]*\).*/\1/p" out | head -1)
  [ -n "$saved" ] && [ "$saved" = "$sum" ] ||
    fail "step $step's parameters after the restore ($sum) are not those saved ($saved)"
  echo "resumed at step $step (recovery point $point), checksum $sum, saved $saved"
fi
[ $rc -eq 130 ] || fail "dslaunch exited $rc after Ctrl-C, expected 130"
wait_for 20 no_leftovers || fail "processes left in the namespaces: $(leftovers 2>&1 >/dev/null)"
[ $fails -eq 0 ] && echo "torch snapshots: all checks passed"
exit $((fails > 0))
