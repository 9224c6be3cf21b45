#!/bin/bash
# `dslaunch report` rendered by a real headless browser:
# a real elastic job on 2 local nodes (127.0.0.1-2, one worker each) whose
# workers send step beats with samples, a loss and now and then an accuracy
# (the metric form), whose rank 1 kills itself (SIGKILL) once in generation
# 0, and lags (4x the step time) for a while in generation 1, which ends 0.
# Then `dslaunch report -o page.html` from the record the job left, and
# Debian's chromium --headless --dump-dom must show both nodes, the restart
# and its cause, the generations and the samples/s axis, no node lost, the
# loss and accuracy curves, rank 1's lag in the step-time strip, the command
# line, job file, hostfile, version and where the logs are;
# `dslaunch status` still reads the record. Then a short dstrain run with
# snapshots on (a save every 20 steps): its page shows the snapshots row and
# dstrain's own loss curve.
#   report_browser_test.sh DSLAUNCH [SCREENSHOT.png]
# With SCREENSHOT, chromium also saves a picture of the page there (how
# docs/report.png is made). Installs chromium when missing
# (scripts/install-deps --report); SKIP (77) when that cannot be done.
set -uo pipefail
DSLAUNCH=$1
SHOT=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../..
if ! command -v chromium >/dev/null; then
  "$root/scripts/install-deps" --report >&2 || { echo "SKIP: chromium could not be installed" >&2; exit 77; }
fi
work=$(mktemp -d /tmp/dsl-report.XXXXXX)
launcher_pid=
cleanup() {
  [ -n "$launcher_pid" ] && kill -KILL "$launcher_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
. "$(dirname "$0")/../test_util/preamble.sh"

mkdir -m 700 "$work/xdg"
printf '127.0.0.1 slots=1\n127.0.0.2 slots=1\n' > "$work/hostfile"
cat > "$work/worker.py" <<'PY'
import os, signal, socket, struct, time
rank = int(os.environ['RANK'])
gen = int(os.environ['DSLAUNCH_GENERATION'])
host, port = os.environ['DSLAUNCH_HEARTBEAT_ADDR'].rsplit(':', 1)
token = os.environ['DSLAUNCH_HEARTBEAT_TOKEN'].encode()
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for step in range(1, 161):
    lag = gen == 1 and rank == 1 and 60 <= step < 100
    time.sleep(0.2 if lag else 0.05)  # the step's work
    loss = 2.0 / step  # the same on both ranks; accuracy after every 40th step
    accuracy = step / 200.0 if step % 40 == 0 else float('nan')
    s.sendto(struct.pack('>qq', rank, step) + token +
             struct.pack('>qqqdd', 45000, 64 if gen == 0 else 48, -1, loss, accuracy), (host, int(port)))
    if gen == 0 and rank == 1 and step == 80:
        os.kill(os.getpid(), signal.SIGKILL)
PY
printf 'command: [python3, worker.py]\nelastic: {max_restarts: 1}\nlog_dir: logs\n' > "$work/job.yaml"

echo "== a real elastic run: rank 1 killed once" >&2
(cd "$work" && env XDG_RUNTIME_DIR="$work/xdg" HOME="$work" DSLAUNCH_COLOR=never DSLAUNCH_STOP_GRACE=500ms \
  DSLAUNCH_DEFAULT_HOSTFILE="$work/none" timeout 120 "$DSLAUNCH" --hostfile "$work/hostfile" job.yaml \
  >"$work/out" 2>"$work/err") &
launcher_pid=$!
wait "$launcher_pid"; rc=$?; launcher_pid=
[ $rc -eq 0 ] || { fail "the job exited $rc, not 0"; cat "$work/err" >&2; }
grep -q "restart 1/1" "$work/err" || fail "no restart in dslaunch's stderr"

echo "== dslaunch status still reads the record (with its timeline)" >&2
env XDG_RUNTIME_DIR="$work/xdg" "$DSLAUNCH" status >"$work/status.out" 2>&1 ||
  fail "dslaunch status: $(cat "$work/status.out")"
grep -q "ended, exit code 0" "$work/status.out" || fail "status: $(cat "$work/status.out")"
grep -q '"timeline":' "$work"/xdg/dslaunch/*.json || fail "the record has no timeline"

echo "== dslaunch report" >&2
env XDG_RUNTIME_DIR="$work/xdg" "$DSLAUNCH" report -o "$work/page.html" >"$work/report.out" 2>&1 ||
  fail "dslaunch report: $(cat "$work/report.out")"
# With no JOB: which record it chose, how to choose another, and where the page went.
grep -qE "^dslaunch: report of [0-9a-f]+-[0-9]+ \(your newest job; \`dslaunch report JOB\` for another, \`dslaunch status --all\` lists them\) written to $work/page.html\$" \
  "$work/report.out" || fail "report did not say which job or where: $(cat "$work/report.out")"
env XDG_RUNTIME_DIR="$work/xdg" "$DSLAUNCH" report nosuchjob >"$work/none.out" 2>&1
[ $? -eq 1 ] && grep -q "report: no record of job nosuchjob in $work/xdg/dslaunch" "$work/none.out" ||
  fail "an unknown job: $(cat "$work/none.out")"

printf '{"job_id": 3}' > "$work/xdg/dslaunch/broken-1.json"
env XDG_RUNTIME_DIR="$work/xdg" "$DSLAUNCH" report broken >"$work/broken.out" 2>&1
[ $? -eq 2 ] && grep -q "report: $work/xdg/dslaunch/broken-1.json: not a job record: " "$work/broken.out" ||
  fail "a broken record: $(cat "$work/broken.out")"

echo "== chromium --headless --dump-dom" >&2
chrome() { timeout 120 chromium --headless --no-sandbox --disable-gpu --user-data-dir="$work/chrome" "$@"; }
chrome --dump-dom "file://$work/page.html" >"$work/dom" 2>"$work/chrome.err" || fail "chromium: $(tail -5 "$work/chrome.err")"
want() { grep -qF -- "$1" "$work/dom" || fail "the DOM lacks: $1"; }
want '<text class="host" x="162.0" y="51.0">127.0.0.1</text>'
want '>127.0.0.2</text>'
want '<title>generation 0: world size 2</title>'
want '<title>generation 1: world size 2</title>'
want '>restart 1</text>'
want 'rank 1'
want 'killed by signal 9 (SIGKILL)'
want '>samples/s</text>'
want '<polyline class="sps" points="'
want '<span class="ok">0 (success)</span>'
# How it ended, from the record's ending: the summary dslaunch printed, the command, the start.
want '<h2>How it ended</h2>'
want 'dslaunch: all 2 workers exited 0, after 1 restart'
want '<tr><th>command</th><td><code>python3 worker.py</code></td></tr>'
want '<tr><th>started</th><td>20'
want '<tr><th>ranks</th><td>world size 2</td></tr>'
# What it was started from, and where its files are.
want "<tr><th>command line</th><td><code>$DSLAUNCH --hostfile $work/hostfile job.yaml</code></td></tr>"
want '<tr><th>job file</th><td><code>job.yaml</code></td></tr>'
want "<tr><th>hostfile</th><td><code>$work/hostfile</code></td></tr>"
want "<tr><th>dslaunch</th><td>$("$DSLAUNCH" --version | cut -d' ' -f2)</td></tr>"
want '<tr><th>duration</th><td>'
want '<tr><th>logs</th><td><code>logs</code> (one file per rank)</td></tr>'
want '<tr><th>hang stacks</th><td>no hang</td></tr>'
# The loss over steps (rank 0's, 2/step) and the accuracy (step/200 every 40 steps), to the
# last one dslaunch heard (the last beats may cross the worker's exit).
want "<title>loss over steps, rank 0's</title>"
want '<polyline class="loss" points="'
grep -qE '<g class="last"><title>step 1[0-9][0-9]: loss 0\.0[12][0-9]*</title>' "$work/dom" || fail "no loss of a late step"
want '<polyline class="accuracy" points="'
grep -qE '<g class="last"><title>step (120|160): accuracy (60|80)\.00%</title>' "$work/dom" || fail "no late accuracy"
# Rank 1 lagged in generation 1: 4x its step time, in the strip.
want '<svg class="strip"'
grep -qE '<rect class="lag[23]" [^>]*><title>rank 1 at [0-9.]+ s: 0\.[0-9]+ s per step, [0-9.]+x the median</title>' "$work/dom" ||
  fail "the strip shows no lag of rank 1"
grep -qE '<rect class="lag3" [^>]*><title>rank 0 at' "$work/dom" && fail "the strip shows rank 0 lagging"
grep -q '<g class="lost">' "$work/dom" && fail "a node shown lost (the agents leaving at the end are not)"
grep -q '<script' "$work/dom" && fail "the page has a script"

echo "== a dstrain run with snapshots: the report's snapshot row, in chromium" >&2
mkdir "$work/snap"
cat > "$work/snap/job.yaml" <<'YAML'
checkpoint: {dir: "ckpt-{host}"}
env: {OMP_NUM_THREADS: '1', OPENBLAS_NUM_THREADS: '1'}
trainer:
  model: {layers: [16, 32, 4], activation: relu}
  data: {dataset: synthetic, samples: 1024, features: 16, classes: 4}
  max_steps: 200
  eval: {every_epoch: false}
  checkpoint: {every_steps: 20, keep: 2}
  config:
    train_micro_batch_size_per_gpu: 8
    optimizer: {type: Adam, params: {lr: 0.001}}
    steps_per_print: 20
YAML
(cd "$work/snap" && env XDG_RUNTIME_DIR="$work/xdg" HOME="$work" DSLAUNCH_COLOR=never DSLAUNCH_STOP_GRACE=500ms \
  DSLAUNCH_DEFAULT_HOSTFILE="$work/none" timeout 120 "$DSLAUNCH" --hostfile "$work/hostfile" job.yaml \
  >"$work/snap/out" 2>"$work/snap/err") &
launcher_pid=$!
wait "$launcher_pid"; rc=$?; launcher_pid=
[ $rc -eq 0 ] || { fail "the snapshot job exited $rc, not 0"; cat "$work/snap/err" >&2; }
env XDG_RUNTIME_DIR="$work/xdg" "$DSLAUNCH" report -o "$work/snap.html" >"$work/snap/report.out" 2>&1 ||
  fail "dslaunch report (snapshots): $(cat "$work/snap/report.out")"
chrome --dump-dom "file://$work/snap.html" >"$work/snap.dom" 2>>"$work/chrome.err" || fail "chromium: $(tail -5 "$work/chrome.err")"
grep -qF '>snapshots</text>' "$work/snap.dom" || fail "the snapshot page lacks its snapshots row"
grep -qE '<g class="snapshot"><title>snapshot( of step [0-9]+)? at [0-9.]+ s</title><path d="M' "$work/snap.dom" ||
  fail "the snapshot page lacks a snapshot point"
grep -qF '<polyline class="loss" points="' "$work/snap.dom" || fail "the dstrain page lacks its loss curve"
grep -qF '<tr><th>checkpoints</th><td><code>ckpt-{host}</code></td></tr>' "$work/snap.dom" ||
  fail "the dstrain page does not say where its checkpoints are"

if [ -n "$SHOT" ]; then
  chrome --hide-scrollbars --window-size=1000,2000 --screenshot="$SHOT" "file://$work/page.html" 2>>"$work/chrome.err" ||
    fail "screenshot: $(tail -5 "$work/chrome.err")"
fi
[ $fails -eq 0 ] || { echo "page:" >&2; cat "$work/page.html" >&2; }
exit $((fails > 0))
