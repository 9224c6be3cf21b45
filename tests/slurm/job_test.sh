#!/bin/bash
# dslaunch under a real Slurm (scripts/slurm-cluster, 3 nodes): run inside
# tests/slurm/with-slurm, which tears the cluster down.
#   job_test.sh DSLAUNCH
# Checks: `dslaunch check` in an allocation probes its nodes through srun;
# an sbatch job with no hostfile runs one agent step over the
# allocation (the workers' env: nodes, slots from --ntasks-per-node, no
# SLURM_PROCID of the agents' step); a failing rank's exit code through
# salloc; a node whose slurmd and processes are killed mid-job is a lost
# node and the elastic job ends on the other two; an agent killed on a live
# node comes back as a new one-node step (elastic.rejoin); scancel leaves no
# process of the job in any namespace.
set -uo pipefail
. "$(cd "$(dirname "$0")" && pwd)/../cluster/netns_lib.sh"
DSLAUNCH=$(readlink -f "$1")
C=${DSLAUNCH_TEST_SLURM:?run me inside tests/slurm/with-slurm}
N=${DSLAUNCH_TEST_CLUSTER:?}
BED=$(cd "$(dirname "$0")/../.." && pwd)/scripts/slurm-cluster
name=$(basename "$C")
work=$(mktemp -d /tmp/dsl-slurmjob.XXXXXX)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/../test_util/preamble.sh"
mapfile -t NODE < <(awk '{print $1}' "$C/nodes")
mapfile -t NS < <(awk '{print $2}' "$C/nodes")
ON0=("$BED" exec 0 --name "$name")  # a client command on node 0, SLURM_CONF set
cd "$work"

keep_pids() { cat "$N/pids/sshd-$1.pid" "$C/slurmd-${NODE[$1]}.pid" 2>/dev/null | tr '\n' ' '; }
wait_files() {  # COUNT GLOB SECONDS
  local deadline=$(( $(date +%s) + $3 ))
  while [ "$(compgen -G "$2" | wc -l)" -lt "$1" ]; do
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 0.1
  done
}

echo "== sbatch: nodes, slots and the workers' environment from the allocation"
cat >"$work/env.sbatch" <<EOF
#!/bin/bash
#SBATCH --nodes=3 --ntasks-per-node=2 --output=$work/env.out
exec "$DSLAUNCH" -- sh -c 'echo "R=\$RANK W=\$WORLD_SIZE N=\$GROUP_RANK L=\$LOCAL_RANK M=\$MASTER_ADDR A=\$(ip -4 -o addr show eth0 | sed -n "s/.* inet \([0-9.]*\).*/\1/p") P=\${SLURM_PROCID:-none} J=\${SLURM_JOB_ID:-none}"'
EOF
timeout 120 "${ON0[@]}" sbatch --wait "$work/env.sbatch" >/dev/null 2>"$work/sbatch.err" || { cat "$work/sbatch.err"; fail "sbatch job failed"; }
cat "$work/env.out"
[ "$(grep -c ' W=6 ' "$work/env.out")" -eq 6 ] || fail "expected 6 workers with WORLD_SIZE=6"
for r in 0 1 2 3 4 5; do
  node=$((r / 2))
  line=$(grep "R=$r W=" "$work/env.out" | head -n1)
  addr=$(awk -v n="$node" 'NR == n + 1 {print $3}' "$C/nodes")
  [[ "$line" == *" N=$node L=$((r % 2)) M=${addr%.*}.11 A=$addr P=none J="[0-9]* ]] ||
    fail "rank $r: expected node $node at $addr, no SLURM_PROCID, the job id: $line"
done
grep -q "all 6 workers exited 0" "$work/env.out" || fail "no summary line"

echo "== check inside salloc: one srun step probes every node of the allocation, no ssh"
timeout 120 "${ON0[@]}" salloc -N3 --ntasks-per-node=2 "$DSLAUNCH" check >"$work/check.out" 2>&1
rc=$?
[ $rc -eq 0 ] || { cat "$work/check.out"; fail "check in the allocation: expected exit 0, got $rc"; }
grep -q "3 of 3 hosts ready" "$work/check.out" || { cat "$work/check.out"; fail "check did not find 3 ready hosts"; }
for node in "${NODE[@]}"; do
  grep -q "^$node  *srun, no ssh  .* ok  *2/2 cpus  *eth0" "$work/check.out" || { cat "$work/check.out"; fail "check: no srun row for $node"; }
done

echo "== salloc: a failing rank's exit code"
timeout 120 "${ON0[@]}" salloc -N3 --ntasks-per-node=2 "$DSLAUNCH" -- sh -c '[ "$RANK" = 3 ] && exit 7; exec sleep 60' \
  >"$work/exit.log" 2>&1
rc=$?
[ $rc -eq 7 ] || { cat "$work/exit.log"; fail "expected exit 7, got $rc"; }
grep -q "rank 3" "$work/exit.log" || fail "the summary does not name rank 3"
wait_for 20 no_leftovers || { leftovers >/dev/null; fail "processes left after a failed job"; }

echo "== a node fails mid-job: the elastic job ends on the other two"
script='if [ "$TORCHELASTIC_RESTART_COUNT" -gt 0 ]; then echo "again R=$RANK W=$WORLD_SIZE"; exit 0; fi; touch '"$work"'/up-$RANK; exec sleep 120'
"${ON0[@]}" salloc -N3 --no-kill "$DSLAUNCH" --max_restarts 1 --nnodes 1:3 -- sh -c "$script" >"$work/lost.log" 2>&1 &
pid=$!
if wait_files 3 "$work/up-*" 60; then
  t0=$(date +%s%N)
  "$BED" kill-node 2 --name "$name"
  wait "$pid"; rc=$?
  echo "job ended $(( ($(date +%s%N) - t0) / 1000000 )) ms after the node was killed, exit $rc"
  grep -E "restart|lost|srun" "$work/lost.log"
  [ $rc -eq 0 ] || { cat "$work/lost.log"; fail "the job did not end well on the survivors (exit $rc)"; }
  grep -q "generation 1 on 2 nodes, world size 2" "$work/lost.log" || { cat "$work/lost.log"; fail "no restart on 2 nodes"; }
  [ "$(grep -c 'again R=[01] W=2' "$work/lost.log")" -eq 2 ] || fail "the survivors did not run generation 1"
else
  cat "$work/lost.log"; fail "the workers did not all start"; kill "$pid"; wait "$pid"
fi
# Node 2 comes back for the next case (ReturnToService=2 once its slurmd registers).
nsenter --net="/run/netns/${NS[2]}" slurmd -f "$C/slurm.conf" -N "${NODE[2]}"
deadline=$(( $(date +%s) + 60 ))
until [ "$(sinfo -h -N -t idle -o %N | sort -u | wc -l)" -eq 3 ]; do
  [ "$(date +%s)" -lt "$deadline" ] || { sinfo -N >&2; fail "node 2 did not come back"; break; }
  sleep 0.2
done

echo "== an agent lost on a live node: a new one-node step brings the node back (elastic.rejoin)"
rm -f "$work"/up-*
cat >"$work/rejoin.yaml" <<EOF
command: ["/bin/sh", "-c", "if [ \"\$TORCHELASTIC_RESTART_COUNT\" -gt 0 ]; then while [ ! -e $work/go ]; do sleep 0.1; done; exit 0; fi; touch $work/up-\$RANK; exec sleep 120"]
elastic: {min_nodes: 1, max_restarts: 1, rejoin: true}
EOF
"${ON0[@]}" salloc -N3 --no-kill "$DSLAUNCH" "$work/rejoin.yaml" >"$work/rejoin.log" 2>&1 &
pid=$!
rejoined() { grep -q "${NODE[2]} rejoined" "$work/rejoin.log"; }
if wait_files 3 "$work/up-*" 60; then
  for p in $(ip netns pids "${NS[2]}"); do
    [ "$(ps -o comm= -p "$p")" = dsagent ] && kill -9 "$p"
  done
  wait_for 60 rejoined || fail "rejoin: ${NODE[2]} did not come back through a new srun step"
  touch "$work/go"
  wait "$pid"; rc=$?
  [ $rc -eq 0 ] || fail "rejoin: the job did not end well (exit $rc)"
else
  fail "rejoin: the workers did not all start"; kill "$pid"; wait "$pid"
fi
grep -E "restart|rejoin|lost" "$work/rejoin.log"
wait_for 30 no_leftovers || { leftovers >/dev/null; fail "rejoin: processes left"; }

echo "== scancel: nothing of the job is left on any node"
rm -f "$work"/up-*
cat >"$work/long.sbatch" <<EOF
#!/bin/bash
#SBATCH --nodes=3 --ntasks-per-node=2 --output=$work/long.out
exec "$DSLAUNCH" -- sh -c 'touch $work/up-\$RANK; exec sleep 300'
EOF
job=$("${ON0[@]}" sbatch --parsable "$work/long.sbatch")
if wait_files 6 "$work/up-*" 60; then
  "${ON0[@]}" scancel "$job"
  wait_for 30 no_leftovers || { leftovers >/dev/null; fail "scancel: processes of the job left in the namespaces"; }
else
  cat "$work/long.out"; fail "scancel: the workers did not all start"; "${ON0[@]}" scancel "$job"
fi

[ $fails -eq 0 ] && echo "slurm job_test: all checks passed"
exit $((fails > 0))
