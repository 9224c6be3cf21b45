#!/bin/bash
# A plain DDP script with no dslaunch code (tests/torch/plain_ddp.py, Debian's
# torch, Gloo) on 2 local nodes, 2 ranks each:
#   1. its steps show in `dslaunch status --json` (every rank past step 20)
#      through the optimizer hook the agent's PYTHONPATH brings (python/);
#   2. rank 1 stuck in user code at step 30 under hang_factor: the hang is
#      said, rank 1 is named the odd one out in the hang report and the job
#      fails (exit 1); its Python frame (stuck_in_user_code) where gdb can
#      call into a process, else that check says skipped and why;
#   3. DSLAUNCH_PYTHON_PACKAGE=0 with hang_factor on: no steps, and after
#      20 s the line that says why the detector has nothing to watch.
#   steps_test.sh DSLAUNCH
set -uo pipefail
DSLAUNCH=$(readlink -f "$1")
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../..
PY=/usr/bin/python3
if ! "$PY" -c 'import torch.distributed' 2>/dev/null; then
  "$root/scripts/install-deps" --torch >&2 || { echo "SKIP: python3-torch could not be installed" >&2; exit 77; }
fi
work=$(mktemp -d /tmp/dsl-steps.XXXXXX)
job_pid=
cleanup() {
  [ -n "$job_pid" ] && kill -KILL "$job_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
cd "$work"
cp "$here/plain_ddp.py" .
H="$root/hostfiles/local"
export XDG_RUNTIME_DIR=$work/run  # this test's jobs only in `dslaunch status`
mkdir -m 700 "$XDG_RUNTIME_DIR"

job() {  # job NAME ELASTIC: the job file
  cat >"$1.yaml" <<YAML
command: [$PY, -u, $work/plain_ddp.py]
procs_per_node: 2
elastic: {heartbeat_interval: 500ms, $2}
YAML
}

echo "== steps of a script with no dslaunch code in dslaunch status --json"
job plain "max_restarts: 0"
STEPS=100000 "$DSLAUNCH" --hostfile "$H" --num_nodes 2 plain.yaml >out.plain 2>&1 &
job_pid=$!
# Polled with a deadline: the view changes once per heartbeat interval.
seen=$("$PY" - "$DSLAUNCH" "$job_pid" <<'PY'
import json, subprocess, sys, time
dslaunch, pid = sys.argv[1], int(sys.argv[2])
deadline, last = time.monotonic() + 90, "nothing"
while time.monotonic() < deadline:
    p = subprocess.run([dslaunch, "status", "--json"], capture_output=True, text=True)
    for line in p.stdout.splitlines():
        v = json.loads(line)
        if v.get("pid") != pid:
            continue
        steps = {r["rank"]: r["step"] for r in v.get("ranks", [])}
        last = steps
        if len(steps) == 4 and min(steps.values()) > 20:
            print("steps", json.dumps(steps, sort_keys=True)); sys.exit(0)
    time.sleep(0.2)  # the poll's interval (it has a deadline)
print("no steps:", last)
PY
)
echo "$seen"
[[ "$seen" == steps* ]] || fail "a plain DDP script's steps did not reach dslaunch status --json: $seen"
kill -INT "$job_pid"; wait "$job_pid"; job_pid=
cat out.plain | tail -5

echo "== rank 1 stuck in user code: the hang said, rank 1 named"
job stuck "max_restarts: 0, hang_factor: 10, hang_floor: 3s"
out=$(STUCK_RANK=1 STUCK_AT=30 timeout 180 "$DSLAUNCH" --hostfile "$H" --num_nodes 2 --log-dir "$work/logs" stuck.yaml 2>&1)
rc=$?
echo "$out" | tail -30
[ $rc -eq 1 ] || fail "the stuck run exited $rc, expected 1"
grep -q "hang: no rank advanced for" <<<"$out" || fail "the hang was not said"
grep -Eq "^dslaunch:   rank 1 \(127\.0\.0\.1\): in .*, step 30$" <<<"$out" ||
  fail "rank 1 is not named the odd one out at step 30"
grep -Eq "^dslaunch:   3 others: in .*, step 3[01]$" <<<"$out" || fail "the 3 other ranks are not grouped"
if grep -q "gdb cannot call into a process on this kernel" "$work/logs/stacks.gen0.txt"; then
  echo "SKIPPED (rank 1's Python frame): gdb cannot call into a process on this kernel"
else
  grep -q "rank 1 (127.0.0.1): in plain_ddp.py:[0-9]* in stuck_in_user_code, step 30" <<<"$out" ||
    fail "rank 1 is not named at its Python frame (stuck_in_user_code)"
fi

echo "== no step beats with hang_factor on: one line says why (after 20 s)"
job nobeats "max_restarts: 0, hang_factor: 10, hang_floor: 2s"
DSLAUNCH_PYTHON_PACKAGE=0 STEPS=100000 "$DSLAUNCH" --hostfile "$H" --num_nodes 2 nobeats.yaml >out.nobeats 2>&1 &
job_pid=$!
line="no rank has reported a step in generation 0's first 20 s, so hang_factor has nothing to watch"
for _ in $(seq 900); do grep -q "$line" out.nobeats && break; kill -0 $job_pid 2>/dev/null || break; sleep 0.1; done
grep -q "$line" out.nobeats || fail "no line said that hang_factor has no steps to watch"
kill -INT "$job_pid"; wait "$job_pid"; job_pid=
grep -v "^127" out.nobeats | tail -4

[ $fails -eq 0 ] && echo "steps_test: all checks passed"
exit $((fails > 0))
