#!/bin/bash
# The recovery point as an invariant (docs/usage.md "Checkpoints without
# shared storage"), on the netns cluster with real ssh, agents and dstrain:
# seeded random snapshot cadences (every 1 to 500 steps), ZeRO stages 0-3,
# replicas 1-2, keep 1-3, in place or not, with and without a CPU hog, and a
# random fault at a random time once the job has a recovery point: a worker
# SIGKILLed, a whole host SIGKILLed, a host's link cut, its agent SIGSTOPped,
# two of them close together (a worker and a host), or the coordinator
# SIGKILLed, alone or with a host (a job with coordinator: {replicas: 3}; a
# standby takes over and `dslaunch attach` follows the job to its end). After
# each trial:
#   - the job resumed at a step >= the recovery point `dslaunch status`
#     published before the fault (when no more nodes were lost than replicas);
#   - never backwards across generations, never from scratch once a
#     recovery point existed;
#   - the job ends 0, and its losses and test accuracy equal a fault-free
#     run resumed from the same save at the same world size (dstrain is
#     bitwise deterministic at a given world size), where that save is on
#     the survivors' disks (RECOVERY_EXACT=0 leaves this out);
#   - the coordinator alone killed: the running generation is taken over as
#     it runs (no restart, no resumption), and every loss printed and the
#     test accuracy equal a fault-free run's from step 0; with a host, the
#     job restarts from the recovery point as above;
#   - nothing of the job (agent, worker, standby, etcd member) outlives it.
# Run inside tests/cluster/with-cluster with 3 nodes (which tears down).
#   recovery_point_test.sh DSLAUNCH [TRIALS]
# RECOVERY_SEED=N replays a schedule (the seed is printed first);
# RECOVERY_RESULTS=FILE appends one line per trial (bench/recovery);
# RECOVERY_EVERY, _STAGE, _REPLICAS, _KEEP, _IN_PLACE, _FAULT, _LOADED, _VICTIM fix a choice.
set -uo pipefail
DSLAUNCH=$(readlink -f "$1")
trials=${2:-5}
C=${DSLAUNCH_TEST_CLUSTER:?run me inside tests/cluster/with-cluster}
work=$(mktemp -d /tmp/dsl-recovery.XXXXXX)
hog=""
cleanup() {
  [ -n "$hog" ] && kill "$hog" 2>/dev/null
  for ns in "${NS[@]}"; do ip netns pids "$ns" | xargs -r kill -CONT 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
seed=${RECOVERY_SEED:-$(( $(date +%s) % 100000 ))}
RANDOM=$seed
echo "recovery point: seed $seed, $trials trials (RECOVERY_SEED=$seed replays them)"
fails=0
fail() { echo "FAIL (seed $seed, trial $trial): $*" >&2; fails=$((fails + 1)); }
. "$(dirname "$0")/netns_lib.sh"
. "$(dirname "$0")/dstrain_job.sh"
read_cluster
name=$(basename "$C")
cd "$work"
# pick NAME VAR VALUES...: sets NAME to $VAR when set (bench/recovery fixes
# some choices), else to one of VALUES; never in a subshell, which would
# reseed RANDOM and lose the replay.
pick() {
  local -n to=$1; local fixed=${!2:-} a=("${@:3}") r=$RANDOM
  if [ -n "$fixed" ]; then to=$fixed; else to=${a[r % ${#a[@]}]}; fi
}

job_yaml() {  # EVERY STAGE REPLICAS KEEP IN_PLACE STEPS [COORDINATOR]
  dstrain_job every="$1" stage="$2" replicas="$3" keep="$4" in_place="$5" steps="$6" coordinator="${7:-}" \
    restarts=3 min_nodes=1 hidden=48 print=100
}
hostfile() { printf '%s slots=1\n' "$@" >"$work/hostfile"; }
run() {  # NAME: dslaunch in the background, output in $work/NAME.out
  DSLAUNCH_STOP_GRACE=500ms "$DSLAUNCH" --hostfile "$work/hostfile" --launcher ssh "$work/job.yaml" \
    >"$work/$1.out" 2>&1 &
  pid=$! started=$SECONDS
}
# finish NAME [LIMIT]: waits for dslaunch (LIMIT s at most, 120 by default); its exit code in
# $rc, the seconds since its run in $took. A reference run does the trial's work again without
# the fault (from step 0 when the coordinator alone was lost): its limit is the trial's own
# time, twice, plus 60 s.
finish() {
  local until=$(( SECONDS + ${2:-120} ))
  while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$until" ]; do sleep 0.02; done
  kill -0 "$pid" 2>/dev/null && { fail "$1: still running after ${2:-120} s"; kill -INT "$pid"; }
  wait "$pid"; rc=$? took=$(( SECONDS - started ))
}
ref_limit() { echo $(( 2 * trial_took + 60 )); }
# The recovery point the running job publishes (-1: none yet, or not running).
# A dslaunch from before the recovery point publishes none: then the newest
# step of which every host has its own shard on its disk stands in (the
# check that the old code fails).
published_point() {
  "$DSLAUNCH" status --json 2>/dev/null | python3 -c '
import glob, json, re, sys
pid, work, hosts = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
for line in sys.stdin:
    v = json.loads(line)
    if v.get("pid") != pid: continue
    if "recovery_point_step" in v: print(v["recovery_point_step"]); break
    own = []
    for r, h in enumerate(hosts):
        own.append({int(re.search(r"step_(\d+)", p).group(1)) for p in glob.glob(f"{work}/ckpt-{h}/step_*/shard_{r}.held")})
    both = set.intersection(*own) if own else set()
    print(max(both) if both else -1); break
else: print(-1)' "$pid" "$work" "${ADDR[@]}"
}
# follow_after_kill NAME: SIGKILLs dslaunch, and from then on `dslaunch
# attach` (its exit code is the job's) writes to NAME's output in its stead.
follow_after_kill() {
  local job
  job=$(sed -n 's/.*leads job \([0-9a-f]*\) in etcd.*/\1/p' "$work/$1.out" | head -1)
  kill -9 "$pid"; wait "$pid" 2>/dev/null
  "$DSLAUNCH" attach --wait 60 "$job" >>"$work/$1.out" 2>&1 &
  pid=$!
}
running_step() {  # the newest step rank 0 printed
  sed -n 's/.* step \([0-9]*\)\/.*/\1/p' "$work/$1.out" | tail -1
}
comm_pids() { ip netns pids "${NS[$1]}" | xargs -r ps -o pid=,comm= -p | awk -v c="$2" '$2 ~ "^(" c ")$" {print $1}'; }
worker_pid() { comm_pids "$1" dstrain; }
agent_pid() { comm_pids "$1" dsagent; }
kill_host() {
  local sshd pids
  sshd=$(cat "$C/pids/sshd-$1.pid")
  pids=$(ip netns pids "${NS[$1]}" | grep -vx "$sshd")
  echo "$pids" | xargs -r kill -STOP; echo "$pids" | xargs -r kill -9
}
# NAME [FROM]: each generation's resumed step after line FROM, in order (-1:
# from scratch): the last save a gather tried before its workers ran (a save
# one node could not gather gives way to an older one within a generation).
resumed_steps() {
  tail -n +"$(( ${2:-0} + 1 ))" "$work/$1.out" | awk '
    match($0, /recovered in place at step [0-9]+ in /) { print substr($0, RSTART + 27, RLENGTH - 31) + 0; cur = ""; next }
    match($0, /resuming from step [0-9]+/) { cur = substr($0, RSTART + 19, RLENGTH - 19) + 0; next }
    /starting from scratch/ { cur = -1; next }
    /dslaunch: generation [0-9]+: all [0-9]+ workers running/ { if (cur != "") print cur; cur = "" }
    END { if (cur != "") print cur }'
}
# losses_after NAME STEP: rank 0's losses of steps > STEP, each step's last
# printed (the steps trained again after the resumption come after those of
# the world before the fault). Not "the lines after the resumption's notice":
# the coordinator's "recovered in place" may come after rank 0's next steps.
losses_after() {
  awk -v s="$2" '
    match($0, / step [0-9]+\//) {
      k = substr($0, RSTART + 6, RLENGTH - 7) + 0
      if (k > s && match($0, / loss [0-9.]+/)) got[k] = substr($0, RSTART + 6, RLENGTH - 6)
    }
    END { for (k in got) print k " " got[k] }' "$work/$1.out" | sort -n
}
accuracy() { sed -n 's/.*\(test accuracy [0-9.]*, test loss [0-9.]*\).*/\1/p' "$work/$1.out" | tail -1; }

# keep_resumed NAME FROM (in the background): once NAME resumes (after line FROM), copies what the
# nodes' disks hold of that step to $work/kept (the agents prune it later).
keep_resumed() {
  local s i d
  for i in $(seq 3000); do
    s=$(resumed_steps "$1" "$2" | head -1)
    [ -n "$s" ] && break
    sleep 0.01
  done
  [ -n "$s" ] && [ "$s" -ge 0 ] || return
  rm -rf "$work/kept"; mkdir -p "$work/kept"
  for d in "$work"/ckpt-*; do
    mkdir -p "$work/kept/${d##*/}"
    cp -a "$d"/step_$(printf '%08d' "$s").* "$work/kept/${d##*/}/" 2>/dev/null
  done
}
# exact NAME STEP HOSTS...: the nodes' disks hold what they held of STEP
# when NAME resumed from it; a plain run on HOSTS resumes from STEP and must
# end where NAME did.
exact() {
  local n=$1 s=$2; shift 2
  [ -d "$work/kept" ] || { echo "   exactness not checked: nothing of step $s was on the disks"; return; }
  rm -rf "$work"/ckpt-*
  cp -a "$work"/kept/ckpt-* "$work"/
  hostfile "$@"
  job_yaml "$every" "$stage" "$replicas" 100 false "$steps" >"$work/job.yaml"
  run "$n-ref"; finish "$n-ref" "$(ref_limit)"
  [ "$rc" -eq 0 ] || { fail "$n: the reference run exited $rc"; return; }
  # A save the job resumed from memory need not be on the disks (only the saves the agents
  # secure are written there): then there is nothing to compare with.
  grep -q "resuming from step $s" "$work/$n-ref.out" ||
    { echo "   exactness not checked: step $s is not on the disks of ${*}"; return; }
  local got want
  got=$(losses_after "$n" "$s") want=$(losses_after "$n-ref" "$s")
  [ "$got" = "$want" ] || {
    fail "$n: losses after step $s differ from a run resumed from it: $(echo $got) vs $(echo $want)"
    echo "   $n's resumptions and last lines:" >&2
    grep -E "recovered in place|resuming from|restart|lost|exit" "$work/$n.out" | tail -15 | sed 's/^/     | /' >&2
    tail -5 "$work/$n.out" | sed 's/^/     | /' >&2
  }
  [ "$(accuracy "$n")" = "$(accuracy "$n-ref")" ] ||
    fail "$n: '$(accuracy "$n")' after the recovery, '$(accuracy "$n-ref")' resumed from step $s"
}

# taken_over_unchanged NAME FROM: the coordinator alone was lost: after line
# FROM a standby took the generation over as it ran, nothing restarted, and
# every loss NAME printed and its accuracy are a fault-free run's.
taken_over_unchanged() {
  local after
  after=$(tail -n +"$(( $2 + 1 ))" "$work/$1.out")
  grep -q "took over generation 0: its 3 worker(s) on 3 node(s) ran on, none restarted" <<<"$after" ||
    { fail "$1: no standby took generation 0 over as it ran"; grep "dslaunch" <<<"$after" | head -20 >&2; return; }
  grep -q "restart [0-9]*/\|in-place recovery" <<<"$after" && fail "$1: a restart after the coordinator's loss"
  [ "${RECOVERY_EXACT:-1}" = 1 ] || return
  rm -rf "$work"/ckpt-*
  hostfile "${ADDR[@]}"
  job_yaml "$every" "$stage" "$replicas" 100 false "$steps" >"$work/job.yaml"
  run "$1-ref"; finish "$1-ref" "$(ref_limit)"
  [ "$rc" -eq 0 ] || { fail "$1: the fault-free run exited $rc"; return; }
  # The losses attach showed (not those printed before it came) are the fault-free run's at those steps.
  local compared
  compared=$(awk 'NR == FNR { ref[$1] = $2; next } $1 in ref { n++; if (ref[$1] != $2) bad = bad " " $1 ": " $2 " vs " ref[$1] }
    END { print bad == "" ? n + 0 : "differ at" bad }' <(losses_after "$1-ref" -1) <(losses_after "$1" -1))
  if [[ $compared =~ ^[1-9][0-9]*$ ]]; then
    echo "   taken over as it ran; $compared losses attach showed are a fault-free run's ($took s)"
  else
    fail "$1: the losses after the takeover are not a fault-free run's (${compared/#0/no step in common})"
  fi
  [ "$(accuracy "$1")" = "$(accuracy "$1-ref")" ] ||
    fail "$1: '$(accuracy "$1")' after the takeover, '$(accuracy "$1-ref")' without a fault"
}

for trial in $(seq "$trials"); do
  pick every RECOVERY_EVERY 1 2 5 10 10 20 50 100 200 500
  pick stage RECOVERY_STAGE 0 1 2 3; pick replicas RECOVERY_REPLICAS 1 1 2; pick keep RECOVERY_KEEP 1 2 3
  pick in_place RECOVERY_IN_PLACE true true false
  pick fault RECOVERY_FAULT worker host partition stop two coordinator coordinator+host
  pick loaded RECOVERY_LOADED no no yes; pick victim RECOVERY_VICTIM 0 1 2; delay=$((RANDOM % 1500))
  steps=$(( every * 12 > 6000 ? every * 12 : 6000 ))
  echo "== trial $trial: every $every, ZeRO $stage, replicas $replicas, keep $keep, in place $in_place," \
       "fault $fault on host $victim, +${delay} ms, CPU hog $loaded"
  rm -rf "$work"/ckpt-*
  hostfile "${ADDR[@]}"
  coordinator=""
  # A takeover outlasts the old lease (3 s), and with a host its grace (10 s): the job must train
  # longer than that after the fault: 25 to 40 s here on 2 quiet cores. A save costs a few steps
  # (30,000 steps took 24 s at "every 500" and 122 s at "every 1", 10,000 steps there 37 s).
  [[ $fault == coordinator* ]] && coordinator="{replicas: 3, grace: 10s}" &&
    steps=$(( steps > 30000 * every / (every + 2) ? steps : 30000 * every / (every + 2) ))
  job_yaml "$every" "$stage" "$replicas" "$keep" "$in_place" "$steps" "$coordinator" >"$work/job.yaml"
  [ "$loaded" = yes ] && { sh -c 'while :; do :; done' & hog=$!; }
  run t$trial
  point=-1
  for i in $(seq 1500); do  # 30 s at most for the first recovery point
    point=$(published_point); [ "$point" -ge 0 ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.02
  done
  [ "$point" -ge 0 ] || fail "no recovery point published within 30 s"
  sleep "$(printf '0.%03d' "$delay")"  # the random schedule, not a synchronisation
  p=$(published_point); [ "$p" -gt "$point" ] && point=$p
  lost=1; survivors=()
  for h in 0 1 2; do [ "$h" -ne "$victim" ] && survivors+=("${ADDR[$h]}"); done
  rm -rf "$work/kept"
  at_fault=$(wc -l <"$work/t$trial.out")  # what generation 0 said is not a resumption
  keep_resumed t$trial "$at_fault" & watcher=$!
  case $fault in
    worker) kill -9 $(worker_pid "$victim"); lost=0; survivors=("${ADDR[@]}");;
    host) kill_host "$victim";;
    partition) ip link set "dsl${name}v${victim}a" down;;
    stop) kill -STOP $(agent_pid "$victim");;
    two) kill -9 $(worker_pid $(( (victim + 1) % 3 ))); kill_host "$victim";;
    coordinator) follow_after_kill t$trial; lost=0; survivors=("${ADDR[@]}");;
    coordinator+host) follow_after_kill t$trial; kill_host "$victim";;
  esac
  finish t$trial
  trial_took=$took
  wait "$watcher"
  case $fault in
    partition) ip link set "dsl${name}v${victim}a" up; ip -n "${NS[$victim]}" neigh flush all;;
    stop) kill -CONT $(agent_pid "$victim") 2>/dev/null;;
  esac
  # The next trial starts on empty disks: nothing of this one may still be writing.
  for i in $(seq 500); do
    left=$(for h in 0 1 2; do comm_pids $h "dsagent|dstrain|dslaunch|etcd"; done)
    [ -z "$left" ] && break
    sleep 0.02
  done
  [ -z "$left" ] || fail "left running 10 s after the job ended: $(echo $left)"
  [ -n "$hog" ] && { kill "$hog"; wait "$hog" 2>/dev/null; hog=""; }
  mapfile -t resumed < <(resumed_steps t$trial "$at_fault")
  echo "   point before the fault $point; resumed at ${resumed[*]:-(none)}; exit $rc after ${trial_took} s"
  [ "$in_place" = true ] && ! grep -q "recovered in place" "$work/t$trial.out" &&
    grep -m2 -o "in-place recovery .*failed: .*\|cannot be taken over as it runs: .*" "$work/t$trial.out" | sed 's/^/   /'
  [ "$rc" -eq 0 ] || { fail "dslaunch exited $rc"; grep -v " step [0-9]*/" "$work/t$trial.out" | tail -25 >&2; }
  if [ "${#resumed[@]}" -eq 0 ] && [ "$fault" != coordinator ]; then
    tail -n +"$((at_fault + 1))" "$work/t$trial.out" | grep -q "restart [0-9]*/\|in-place recovery" &&
      fail "no generation resumed after the fault" || echo "   the job ended before the fault was noticed"
  fi
  prev=-1
  for s in "${resumed[@]}"; do
    [ "$s" -ge 0 ] || { fail "started from scratch with a recovery point at step $point"; grep "^dslaunch:" "$work/t$trial.out" >&2; }
    [ "$lost" -le "$replicas" ] && [ "$s" -lt "$point" ] && fail "resumed at step $s, before the recovery point $point"
    [ "$s" -lt "$prev" ] && { fail "went backwards across generations: step $prev, then $s"; grep "^dslaunch:" "$work/t$trial.out" >&2; }
    prev=$s
  done
  if [ -n "${RECOVERY_RESULTS:-}" ]; then
    how=fell-back; [ "$in_place" = false ] && how=restarted
    grep -q "recovered in place" "$work/t$trial.out" && how=in-place
    [ "${#resumed[@]}" -eq 0 ] && how=unnoticed  # the job ended before the fault was seen
    grep -q "took over generation [0-9]*: .* none restarted" "$work/t$trial.out" && how=taken-over
    grep -q "starting from scratch" "$work/t$trial.out" && how=lost
    [ "$rc" -eq 0 ] || how=failed
    echo "$seed $trial $every $stage $replicas $keep $in_place $fault $loaded $point ${resumed[0]:--} $how" \
      >>"$RECOVERY_RESULTS"
  fi
  # Exactness: from the first resumption on, at the world size the job ended
  # with (two resumptions: not compared).
  [ "$rc" -eq 0 ] && [ "${#resumed[@]}" -eq 1 ] && [ "${resumed[0]}" -ge 0 ] && [ "${RECOVERY_EXACT:-1}" = 1 ] &&
    exact t$trial "${resumed[0]}" "${survivors[@]}"
  [ "$fault" = coordinator ] && [ "$rc" -eq 0 ] && taken_over_unchanged t$trial "$at_fault"
done
echo "recovery point: $fails failure(s) (seed $seed)"
[ "$fails" -eq 0 ]
