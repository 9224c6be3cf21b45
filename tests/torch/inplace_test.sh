#!/bin/bash
# A PyTorch job recovered in place (issue 44): tests/torch/ddp_snapshot.py
# with ELASTIC=1, a DDP (Gloo) script inside dslaunch.torch.elastic(),
# Debian's torch, on 3 local nodes (loopback addresses, their own agents),
# one rank each, node-local snapshot folders, elastic.in_place:
#   1. node 3's agent and rank SIGKILLed together (a lost node, at a random
#      point 0-300 ms after a save): the job is
#      recovered in place at world 2, ranks 0 and 1 are the same processes,
#      rank 0's parameters after the restore are bit for bit the ones it
#      printed when it saved that step, their steps reach `dslaunch status
#      --json` in generation 1, and the job ends 0;
#   2. rank 1 SIGKILLed (a crashed worker): recovered in place at world 3
#      with a replacement rank 1 (a new process joining the survivors'
#      group), ranks 0 and 2 the same processes, the job ends 0;
#   3. the script without elastic() (ELASTIC=0) with in_place on: the
#      recovery falls back to the full restart, saying why (its survivors
#      fail on the closed connection, or the deadline passes), resumes from
#      the save, and ends 0.
#   inplace_test.sh DSLAUNCH
set -uo pipefail
DSLAUNCH=$(readlink -f "$1")
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../..
PY=/usr/bin/python3
if ! "$PY" -c 'import torch.distributed' 2>/dev/null; then
  "$root/scripts/install-deps" --torch >&2 || { echo "SKIP: python3-torch could not be installed" >&2; exit 77; }
fi
work=$(mktemp -d /tmp/dsl-inplace.XXXXXX)
job_pid=
cleanup() {
  [ -n "$job_pid" ] && kill -KILL "$job_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
cd "$work"
cp "$here/ddp_snapshot.py" .
printf '127.0.0.%d slots=1\n' 1 2 3 >hostfile
export XDG_RUNTIME_DIR=$work/run
mkdir -m 700 "$XDG_RUNTIME_DIR"

job() {  # job ELASTIC: the job file
  cat >job.yaml <<YAML
command: [$PY, -u, $work/ddp_snapshot.py]
working_dir: $work
checkpoint: {dir: "$work/ckpt-{host}", keep: 3, replicas: 1}
elastic: {max_restarts: 2, min_nodes: 1, in_place: true, in_place_deadline: 10s, heartbeat_interval: 250ms, heartbeat_timeout: 2s}
env: {OMP_NUM_THREADS: '1', STEPS: '400', EVERY: '20', ELASTIC: '$1'}
YAML
}
start() {  # start ELASTIC: runs the job in the background until rank 0 saved step 100
  rm -rf "$work"/ckpt-* out
  job "$1"
  DSLAUNCH_STOP_GRACE=500ms "$DSLAUNCH" --hostfile hostfile job.yaml >out 2>&1 &
  job_pid=$!
  for _ in $(seq 1200); do
    grep -q "saved step=100 " out && return 0
    kill -0 "$job_pid" 2>/dev/null || break
    sleep 0.1
  done
  fail "ELASTIC=$1: no save of step 100 within 120 s"; cat out >&2
  return 1
}
finish() {  # finish NAME: waits for the job; its exit code must be 0
  wait "$job_pid"; local rc=$?
  job_pid=
  [ "$rc" -eq 0 ] || { fail "$1: the job exited $rc"; grep -v "saved step" out | tail -30 >&2; }
}
pid_of() { sed -n "s/.*rank=$1 pid=\([0-9]*\) world=[0-9]* generation=$2 .*/\1/p" out | head -1; }
same_bits() {  # same_bits NAME WORLD: rank 0's restored parameters are the save's
  local restored step sum saved
  restored=$(sed -n "s/.*restored step=\([0-9]*\) checksum=\([0-9a-f]*\) world=$2\$/\1 \2/p" out | head -1)
  read -r step sum <<<"$restored"
  [ -n "$restored" ] || { fail "$1: rank 0 did not restore at world $2"; return; }
  saved=$(sed -n "s/.*saved step=$step checksum=\([0-9a-f]*\)\$/\1/p" out | head -1)
  [ "$saved" = "$sum" ] || fail "$1: restored step $step with checksum $sum, saved with '$saved'"
}

echo "== 1. a lost node: recovered in place at world 2, the same processes, the same bits"
if start 1; then
  victim=$(pid_of 2 0)
  agent=$(ps -o ppid= -p "$victim" | tr -d ' ')
  r0=$(pid_of 0 0) r1=$(pid_of 1 0)
  # Anywhere in a step (a backward's allreduce, a hand-off): 0-300 ms after the save, said for a rerun.
  pause=$(printf '0.%03d' $((RANDOM % 300)))
  echo "node 3 lost ${pause} s after the save of step 100"
  sleep "$pause"  # a random point in the schedule, not a wait for an event
  kill -STOP "$agent" "$victim"; kill -KILL "$agent" "$victim"
  # The survivors' step beats still count (they carry the rank each started with).
  seen=$("$PY" - "$DSLAUNCH" "$job_pid" <<'PY'
import json, re, subprocess, sys, time
dslaunch, pid = sys.argv[1], int(sys.argv[2])
deadline, last = time.monotonic() + 60, "nothing"
while time.monotonic() < deadline:
    restored = re.search(r"restored step=(\d+) ", open("out").read())
    p = subprocess.run([dslaunch, "status", "--json"], capture_output=True, text=True)
    for line in p.stdout.splitlines():
        v = json.loads(line)
        if v.get("pid") != pid:
            continue
        last = (v.get("generation"), {r["rank"]: r["step"] for r in v.get("ranks", [])})
        if restored and last[0] == 1 and len(last[1]) == 2 and min(last[1].values()) > int(restored.group(1)):
            print("steps", last); sys.exit(0)
    time.sleep(0.2)  # the poll's interval (it has a deadline)
print("no steps of generation 1 past the restored one:", last)
PY
)
  echo "$seen"
  [[ "$seen" == steps* ]] || fail "lost node: $seen"
  finish "lost node"
  grep -q "dslaunch: recovered in place at step [0-9]* in [0-9]* ms" out || fail "lost node: not recovered in place"
  [ "$(pid_of 0 1)" = "$r0" ] && [ "$(pid_of 1 1)" = "$r1" ] ||
    fail "lost node: ranks 0 and 1 of generation 1 are pids '$(pid_of 0 1)' '$(pid_of 1 1)', not $r0 $r1"
  grep -q "rank=[0-9] pid=[0-9]* world=2 generation=1 " out || fail "lost node: generation 1 is not of world 2"
  same_bits "lost node" 2
  grep "recovered in place" out
fi

echo "== 2. a crashed rank: recovered in place with a replacement"
if start 1; then
  r0=$(pid_of 0 0) r1=$(pid_of 1 0) r2=$(pid_of 2 0)
  kill -KILL "$r1"
  finish "crashed rank"
  grep -q "dslaunch: recovered in place at step" out || { fail "crashed rank: not recovered in place"; grep -v "saved step" out | tail -30 >&2; }
  [ "$(pid_of 0 1)" = "$r0" ] && [ "$(pid_of 2 1)" = "$r2" ] || fail "crashed rank: ranks 0 and 2 were restarted"
  new=$(pid_of 1 1)
  [ -n "$new" ] && [ "$new" != "$r1" ] || fail "crashed rank: no replacement rank 1 in generation 1 ('$new')"
  same_bits "crashed rank" 3
fi

echo "== 3. a script without elastic(): the full restart, said"
if start 0; then
  kill -KILL "$(pid_of 1 0)" || fail "a script without elastic(): no rank 1 to kill"
  finish "without elastic()"
  # Its survivors raise when the peer's connection closes, or say nothing until the deadline.
  grep -Eq "in-place recovery of generation 1 failed: .*(exited with code 1|did not confirm within 10 s); restarting every worker" out ||
    { fail "without elastic(): no fallback line"; grep dslaunch: out >&2; }
  grep -q "restored step=" out || fail "without elastic(): the full restart did not resume from the save"
fi

[ "$fails" -eq 0 ] && echo "PASS" || echo "$fails failure(s)"
[ "$fails" -eq 0 ]
