#!/bin/bash
# Warm spares (issue 31, the job file's python: {preload: [torch]}) with real
# PyTorch workers (Debian's python3-torch) on 2 local nodes, 1 worker each.
# Every run's generation 0 ends when rank 1 exits 1 (once the test opens
# GO_FIFO, after the agents said their spares are ready); generation 1 runs
# on the spares (tests/torch/warm_probe.py prints what it can see):
#   1. contract parity: generation 1's observations (argv, __file__,
#      sys.path[0], pgid, PDEATHSIG, parent, cores (bind_core_list: '1'),
#      nice, signals, stdio, the error file, the environment's names and the
#      torchrun values) and their prefixed lines, stdout and --log-dir, are
#      the same as a cold run's; the warm one had torch imported already and
#      no CUDA context; a Gloo group forms;
#   2. the same for the -m form;
#   3. a script that raises at import: exit 1 and the same traceback as cold;
#   4. a spare SIGKILLed while waiting: its rank starts cold, said in one
#      line, the other rank warm, the job ends 0;
#   5. a preload that fails to import: both ranks start cold, said, exit 0;
#   6. SIGINT to dslaunch while the spares wait: exit 130, nothing left.
#   warm_test.sh DSLAUNCH
set -uo pipefail
DSLAUNCH=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../..
PY=/usr/bin/python3
if ! "$PY" -c 'import torch.distributed' 2>/dev/null; then
  "$root/scripts/install-deps" --torch >&2 || { echo "SKIP: python3-torch could not be installed" >&2; exit 77; }
fi
work=$(mktemp -d /tmp/dsl-warm.XXXXXX)
run_dir=$work/run  # the jobs' working directory: a process whose cwd is here is ours
mkdir "$run_dir"
cp "$here/warm_probe.py" "$run_dir/"
launcher_pid=
cleanup() {
  [ -n "$launcher_pid" ] && kill -KILL "$launcher_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
. "$(dirname "$0")/../test_util/preamble.sh"
H="$root/hostfiles/local"

# Processes still working in $run_dir, polled until none or 20 s have passed.
leftovers() {
  local deadline=$((SECONDS + 20)) left
  while :; do
    left=$(for p in /proc/[0-9]*; do [ "$(readlink "$p/cwd" 2>/dev/null)" = "$run_dir" ] && echo "${p#/proc/}"; done)
    [ -z "$left" ] || [ $SECONDS -ge $deadline ] && break
    sleep 0.1  # the poll interval of this scan of /proc (it has a deadline)
  done
  echo "$left"
}

# job NAME PRELOAD COMMAND...: the job file for a run.
job() {
  local name=$1 preload=$2; shift 2
  local cmd; cmd=$(printf '"%s", ' "$@")
  { echo "command: [${cmd%, }]"; echo "procs_per_node: 1"; echo "working_dir: $run_dir"
    echo "bind_cores_to_rank: true"; echo "bind_core_list: '1'"; echo "elastic: {max_restarts: 1}"
    [ -n "$preload" ] && echo "python: {preload: [$preload]}"; } > "$work/$name.yaml"
}

# start NAME N [VAR=VALUE...]: dslaunch with job NAME in the background,
# output in $work/NAME.out; returns once N lines matched $ready (the
# agents' "spare ready" lines unless set otherwise).
ready="warm spare for local rank 0 ready"
start() {
  local name=$1 spares=$2; shift 2
  rm -f "$work/go.fifo" && mkfifo "$work/go.fifo"
  : > "$work/$name.out"
  env "$@" GO_FIFO="$work/go.fifo" DSLAUNCH_LOG=INFO timeout 240 "$DSLAUNCH" --hostfile "$H" --num_nodes 2 \
    --log-dir "$work/$name.logs" "$work/$name.yaml" > "$work/$name.out" 2>&1 &
  launcher_pid=$!
  if [ "$spares" -gt 0 ]; then
    local deadline=$((SECONDS + 120))
    until [ "$(grep -c -- "$ready" "$work/$name.out")" -ge "$spares" ]; do
      [ $SECONDS -ge $deadline ] && { fail "$name: never $spares line(s) '$ready'"; break; }
      sleep 0.05  # the poll interval of this wait for the agents' lines (it has a deadline)
    done
  fi
}

# finish NAME: lets generation 0 end, waits for dslaunch; its status in $rc.
finish() {
  local name=$1
  timeout 120 bash -c ": > '$work/go.fifo'" || fail "$name: rank 1 never opened the go fifo"
  wait "$launcher_pid"; rc=$?; launcher_pid=
  echo "--- $name (exit $rc)"; cat "$work/$name.out"
  [ -z "$(leftovers)" ] || fail "$name: processes left in $run_dir: $(leftovers)"
}

# The generation-1 lines a script printed, prefixes kept, per-run values masked.
observed() { grep -E "(probe rank=|stderr line from rank)" "$work/$1.out" | sed -E 's/[0-9a-f]{12,}/X/g' | sort; }

echo "== 1. contract parity, script form"
job cold "" "$PY" -u warm_probe.py --flag a
start cold 0; finish cold
[ $rc -eq 0 ] || fail "the cold run exited $rc"
job warm torch "$PY" -u warm_probe.py --flag a
start warm 2; finish warm
[ $rc -eq 0 ] || fail "the warm run exited $rc"
[ "$(observed cold | wc -l)" -eq 4 ] || fail "the cold run printed $(observed cold | wc -l) probe lines, not 4"
diff <(observed cold) <(observed warm) || fail "a warm worker sees something a cold one does not (diff above)"
grep -q "preloaded rank=0 True" "$work/warm.out" && grep -q "preloaded rank=1 True" "$work/warm.out" ||
  fail "generation 1 did not run on the spares"
grep -q "preloaded rank=0 False" "$work/cold.out" || fail "the cold run's worker had torch already"
for r in 0 1; do
  grep -q "cuda_initialized rank=$r False" "$work/warm.out" || fail "rank $r: CUDA initialised in a spare"
  grep -q "rank=$r allreduce=2" "$work/warm.out" || fail "rank $r: the warm Gloo all-reduce did not give 2"
  grep -q "probe rank=$r" "$work/warm.logs/rank$r.stdout.log" || fail "rank $r: --log-dir lacks the warm worker's line"
done
grep -q "('cores', \[1\])" "$work/warm.out" || fail "the warm workers are not bound to core 1 (bind_core_list)"
grep -q "RSS [0-9]* MiB" "$work/warm.out" || fail "the spares' RSS is not reported"
grep "starts cold" "$work/warm.out" && fail "a rank started cold with ready spares"

echo "== 2. contract parity, -m form"
job mcold "" "$PY" -u -m warm_probe x
start mcold 0; finish mcold
job mwarm "torch, numpy" "$PY" -u -m warm_probe x
start mwarm 2; finish mwarm
[ $rc -eq 0 ] || fail "the warm -m run exited $rc"
diff <(observed mcold) <(observed mwarm) || fail "-m: a warm worker sees something a cold one does not (diff above)"
grep -q "preloaded rank=1 True" "$work/mwarm.out" || fail "-m: generation 1 did not run on the spares"

echo "== 3. a script that raises at import: exit 1, the traceback python3 prints"
# From rank 1's own stderr file of generation 1 (--log-dir): in dslaunch's
# output, where stdout and stderr share one file, a long stdout line (probe)
# can be cut by a stderr line written in the middle of it on a loaded machine.
traceback() { sed -n '/restarted, generation 1/,$p' "$work/$1.logs/rank1.stderr.log" |
  sed -n '/Traceback/,/RuntimeError/p'; }
job rcold "" "$PY" -u warm_probe.py
start rcold 0 RAISE_AT_IMPORT=1; finish rcold
job rwarm torch "$PY" -u warm_probe.py
start rwarm 2 RAISE_AT_IMPORT=1; finish rwarm
[ $rc -eq 1 ] || fail "the raising warm run exited $rc, not 1"
grep -q "RuntimeError: rank 1 cannot start" "$work/rwarm.out" || fail "the exception is not on stderr"
[ -n "$(traceback rwarm)" ] && diff <(traceback rcold) <(traceback rwarm) || fail "the warm traceback differs from the cold one"
grep -q '<string>' "$work/rwarm.out" && fail "the spare's own frames show in the traceback"

echo "== 4. a spare SIGKILLed while waiting: its rank starts cold, said once"
job killed torch "$PY" -u warm_probe.py
start killed 2 KILL_SPARE=1; finish killed
[ $rc -eq 0 ] || fail "the run with a killed spare exited $rc"
[ "$(grep -c 'local rank 0 starts cold: its warm spare failed: it was killed by signal 9 while waiting' "$work/killed.out")" -eq 1 ] ||
  fail "the cold start after a dead spare is not said in one line"
grep -q "preloaded rank=1 False" "$work/killed.out" || fail "rank 1 should have started cold"
grep -q "preloaded rank=0 True" "$work/killed.out" || fail "rank 0 should still have run warm"


echo "== 5. a preload that fails to import: cold starts, said"
job badmod "torch, no_such_module_dsl" "$PY" -u warm_probe.py
ready="No module named 'no_such_module_dsl'" start badmod 2
finish badmod
[ $rc -eq 0 ] || fail "the run with a failing preload exited $rc"
grep -q "starts cold: its warm spare failed: import no_such_module_dsl failed: ModuleNotFoundError: No module named 'no_such_module_dsl'" \
  "$work/badmod.out" || fail "the cold start does not name the failed import"
grep -q "preloaded rank=1 False" "$work/badmod.out" || fail "rank 1 should have started cold"

echo "== 6. SIGINT to dslaunch while the spares wait: nothing left behind"
job sigint torch "$PY" -u warm_probe.py
start sigint 2
kill -INT "$launcher_pid"
wait "$launcher_pid"; rc=$?; launcher_pid=
cat "$work/sigint.out"
[ $rc -eq 130 ] || fail "SIGINT: dslaunch exited $rc, not 130"
left=$(leftovers)
[ -z "$left" ] || { ps -o pid,ppid,pgid,args -p "${left//$'\n'/,}"; fail "SIGINT: processes left behind: $left"; }

[ $fails -eq 0 ] && echo "warm_test: all passed" || echo "warm_test: $fails failure(s)"
[ $fails -eq 0 ]
