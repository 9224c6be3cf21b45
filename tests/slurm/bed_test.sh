#!/bin/bash
# The Slurm test bed itself (scripts/slurm-cluster, 3 nodes), no dslaunch:
# run inside tests/slurm/with-slurm, which tears the bed down.
#   bed_test.sh
# Checks: salloc + srun puts one task on each node, with its NodeName,
# node id and the namespace's address, from the host and from node 0's
# namespace; an `sbatch --wait` job's srun reaches all three nodes, and
# scontrol gives the job's hostnames and each node's NodeAddr;
# scancel of a running job leaves no process in any namespace; a node
# killed during an allocation (kill-node) shows as not responding, then
# DOWN, within a deadline. Every wait polls with a deadline.
set -uo pipefail
. "$(cd "$(dirname "$0")" && pwd)/../cluster/netns_lib.sh"
C=${DSLAUNCH_TEST_SLURM:?run me inside tests/slurm/with-slurm}
: "${SLURM_CONF:?}" "${DSLAUNCH_SSH_CONFIG:?}"
BED=$(cd "$(dirname "$0")/../.." && pwd)/scripts/slurm-cluster
N=${DSLAUNCH_TEST_CLUSTER:?}  # the netns cluster underneath
name=$(basename "$C")
work=$(mktemp -d /tmp/dsl-slurmbed.XXXXXX)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/../test_util/preamble.sh"
mapfile -t NODE < <(awk '{print $1}' "$C/nodes")
mapfile -t NS < <(awk '{print $2}' "$C/nodes")
mapfile -t ADDR < <(awk '{print $3}' "$C/nodes")
[ ${#NODE[@]} -eq 3 ] || { echo "FAIL: expected 3 nodes in $C/nodes" >&2; exit 1; }
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
cd "$work"

# One line per task: "NodeName node-id address".
task='echo "$SLURMD_NODENAME $SLURM_NODEID $(ip -4 -o addr show eth0 | sed -n "s/.* inet \([0-9.]*\)\/.*/\1/p")"'
expected() {
  local i
  for i in 0 1 2; do echo "${NODE[$i]} $i ${ADDR[$i]}"; done
}
same_lines() {  # FILE WHAT
  if [ "$(grep -E '^[^ ]+ [0-9]+ [0-9.]+$' "$1" | sort)" != "$(expected)" ]; then
    echo "expected:" >&2; expected >&2; echo "got:" >&2; cat "$1" >&2
    fail "$2"
  fi
}

# The bed's own processes in namespace I: its sshd listener and slurmd.
keep_pids() { cat "$N/pids/sshd-$1.pid" "$C/slurmd-${NODE[$1]}.pid" 2>/dev/null | tr '\n' ' '; }
files_at_least() { [ "$(compgen -G "$2" | wc -l)" -ge "$1" ]; }  # COUNT GLOB
queue_empty() { [ -z "$(squeue -h 2>/dev/null)" ]; }
node_state() { sinfo -h -N -n "$1" -o %T 2>/dev/null | head -n1; }
not_responding() { [[ "$(node_state "$1")" == *'*'* ]]; }
node_down() { [[ "$(node_state "$1")" == down* ]]; }

echo "== salloc -N3 + srun: one task per node (from the host)"
t0=$(date +%s%N)
timeout 60 salloc -N3 srun -N3 --ntasks-per-node=1 sh -c "$task" >"$work/host.out" 2>"$work/host.err" ||
  { cat "$work/host.err" >&2; fail "salloc/srun from the host failed"; }
echo "salloc + srun from the host: $(ms_since "$t0") ms"
cat "$work/host.out"
same_lines "$work/host.out" "salloc/srun from the host: not one task on each node"

echo "== the same from node 0's namespace"
timeout 60 "$BED" exec 0 --name "$name" salloc -N3 srun -N3 --ntasks-per-node=1 sh -c "$task" \
  >"$work/ns0.out" 2>"$work/ns0.err" || { cat "$work/ns0.err" >&2; fail "salloc/srun from node 0 failed"; }
same_lines "$work/ns0.out" "salloc/srun from node 0's namespace: not one task on each node"

echo "== sbatch --wait: the batch script's srun reaches all three nodes"
cat >"$work/three.sbatch" <<EOF
#!/bin/bash
#SBATCH --nodes=3 --output=$work/three.out
scontrol show hostnames "\$SLURM_JOB_NODELIST" >$work/hostnames
srun --nodes=3 --ntasks-per-node=1 sh -c '$task'
EOF
timeout 120 sbatch --wait "$work/three.sbatch" >/dev/null 2>"$work/sbatch.err" ||
  { cat "$work/sbatch.err" >&2; fail "sbatch --wait failed"; }
same_lines "$work/three.out" "sbatch: the output file does not have all three nodes"
[ "$(cat "$work/hostnames" 2>/dev/null)" = "$(printf '%s\n' "${NODE[@]}")" ] ||
  fail "scontrol show hostnames in the job: expected ${NODE[*]}, got $(cat "$work/hostnames" 2>/dev/null)"
for i in 0 1 2; do
  scontrol show node -o "${NODE[$i]}" | grep -q " NodeAddr=${ADDR[$i]} " ||
    fail "scontrol show node -o ${NODE[$i]}: no NodeAddr=${ADDR[$i]}"
done

echo "== scancel: nothing of the job is left in any namespace"
cat >"$work/long.sbatch" <<EOF
#!/bin/bash
#SBATCH --nodes=3 --output=$work/long.out
srun --nodes=3 --ntasks-per-node=1 sh -c 'touch $work/up-\$SLURM_NODEID; exec sleep 300'
EOF
job=$(sbatch --parsable "$work/long.sbatch")
if wait_for 60 files_at_least 3 "$work/up-*"; then
  [ "$(leftovers 2>/dev/null)" -gt 0 ] || fail "scancel: the job's processes are not visible in the namespaces"
  t0=$(date +%s%N)
  scancel "$job"
  if wait_for 30 no_leftovers; then
    echo "scancel: all gone after $(ms_since "$t0") ms"
  else
    leftovers >/dev/null; fail "scancel: processes of the job left in the namespaces after 30 s"
  fi
  wait_for 30 queue_empty || { squeue >&2; fail "scancel: the job is still in the queue after 30 s"; }
else
  cat "$work/long.out" >&2; fail "scancel: the job's tasks did not all start"; scancel "$job"
fi

echo "== kill-node during an allocation: Slurm sees the node fail"
# A batch job, not salloc: salloc's local command outlives a revoked
# allocation when salloc has no terminal, so it would be left behind here.
rm -f "$work"/up-*
cat >"$work/kill.sbatch" <<EOF
#!/bin/bash
#SBATCH --nodes=3 --no-kill --output=$work/kill.out
srun --nodes=3 --ntasks-per-node=1 sh -c 'touch $work/up-\$SLURM_NODEID; exec sleep 300'
echo "srun exited \$?"
exec sleep 300
EOF
job=$(sbatch --parsable "$work/kill.sbatch")
if wait_for 60 files_at_least 3 "$work/up-*"; then
  t0=$(date +%s%N)
  "$BED" kill-node 2 --name "$name"
  if wait_for 60 not_responding "${NODE[2]}"; then
    echo "kill-node: ${NODE[2]} not responding after $(ms_since "$t0") ms"
  else
    sinfo -N >&2; fail "kill-node: ${NODE[2]} still responding 60 s after its slurmd was killed"
  fi
  if wait_for 60 node_down "${NODE[2]}"; then
    echo "kill-node: ${NODE[2]} DOWN after $(ms_since "$t0") ms"
  else
    sinfo -N >&2; fail "kill-node: ${NODE[2]} not DOWN 60 s after its slurmd was killed"
  fi
  if [ -z "$(node_state "${NODE[0]}")" ] || not_responding "${NODE[0]}"; then
    sinfo -N >&2; fail "kill-node: ${NODE[0]} was hit too"
  fi
  grep -h "srun exited" "$work/kill.out" || echo "(the job's srun is still running)"
else
  cat "$work/kill.out" >&2; fail "kill-node: the job's tasks did not all start"
fi
scancel "$job"
wait_for 30 queue_empty || { squeue >&2; fail "kill-node: the job is still in the queue 30 s after scancel"; }
wait_for 30 no_leftovers || { leftovers >/dev/null; fail "kill-node: processes left in the namespaces after scancel"; }

[ $fails -eq 0 ] && echo "slurm bed_test: all checks passed"
exit $((fails > 0))
