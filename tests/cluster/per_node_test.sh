#!/bin/bash
# The per-node form on the netns cluster (3 namespaces, no ssh used): the same
# dslaunch command in every namespace, node 0 runs the job.
#   per_node_test.sh DSLAUNCH     (inside tests/cluster/with-cluster)
# Checks: nodes 1 and 2 start before node 0 and join it (one of them through
# Kubeflow's PET_* variables); the workers' env and addresses; a node with a
# wrong secret is refused (exit 5) and the job goes on once it comes back
# with the right one; no secret file off loopback, or a secret file others can
# read, is refused before anything starts; node 0 killed mid-job ends the
# other nodes' dslaunch (exit 4) and leaves no process in any namespace.
set -uo pipefail
. "$(cd "$(dirname "$0")" && pwd)/netns_lib.sh"
DSLAUNCH=$(readlink -f "$1")
C=${DSLAUNCH_TEST_CLUSTER:?run me inside tests/cluster/with-cluster}
work=$(mktemp -d /tmp/dsl-pernode.XXXXXX)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/../test_util/preamble.sh"
read_cluster
cd "$work"
openssl rand -hex 32 >"$work/secret" 2>/dev/null || head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/secret"
chmod 600 "$work/secret"
PORT=29611
ENVLINE='echo "R=$RANK W=$WORLD_SIZE N=$GROUP_RANK M=$MASTER_ADDR A=$(ip -4 -o addr show eth0 | sed -n "s/.* inet \([0-9.]*\).*/\1/p")"'

keep_pids() { cat "$C/pids/sshd-$1.pid"; }
# node I [ENV...] -- dslaunch args...: runs dslaunch in node I's namespace.
node() {
  local i=$1; shift
  local env=()
  while [ "$1" != "--" ]; do env+=("$1"); shift; done
  shift
  ip netns exec "${NS[$i]}" env DSLAUNCH_SECRET_FILE="$work/secret" "${env[@]}" "$DSLAUNCH" "$@"
}
args() { echo --nnodes 3 --node_rank "$1" --nproc_per_node 2 --master_addr "${ADDR[0]}" --master_port "$PORT"; }

echo "== nodes 1 and 2 first (node 2 through PET_* variables), then node 0"
node 1 -- $(args 1) -- sh -c "$ENVLINE" >"$work/n1.out" 2>&1 &
p1=$!
node 2 PET_NNODES=3 PET_NODE_RANK=2 PET_MASTER_ADDR="${ADDR[0]}" PET_MASTER_PORT=$PORT -- \
  --nproc_per_node 2 -- sh -c "$ENVLINE" >"$work/n2.out" 2>&1 &
p2=$!
timeout 120 bash -c "$(declare -f node args); $(declare -p NS ADDR work DSLAUNCH PORT); node 0 -- \$(args 0) -- sh -c '$ENVLINE'" \
  >"$work/n0.out" 2>&1
rc=$?
wait $p1; r1=$?
wait $p2; r2=$?
cat "$work/n0.out"
[ $rc -eq 0 ] && [ $r1 -eq 0 ] && [ $r2 -eq 0 ] || fail "exit codes: node 0 $rc, node 1 $r1, node 2 $r2"
for r in 0 1 2 3 4 5; do
  n=$((r / 2))
  grep -q "R=$r W=6 N=$n M=${ADDR[0]} A=${ADDR[$n]}\$" "$work/n0.out" || fail "rank $r: not on node $n (${ADDR[$n]})"
done
grep -q "joining node 0 at ${ADDR[0]}:$PORT" "$work/n1.out" || fail "node 1 did not say what it joins"
grep -q "(PET_NNODES/PET_NODE_RANK)" "$work/n2.out" || fail "node 2 did not use the PET_* variables"

echo "== a wrong secret is refused; the node joins once it has the right one"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/wrong"
chmod 600 "$work/wrong"
node 0 -- $(args 0) -- sh -c 'echo "R=$RANK ok"' >"$work/w0.out" 2>&1 &
p0=$!
node 1 -- $(args 1) -- true >"$work/w1.out" 2>&1 &
p1=$!
timeout 60 ip netns exec "${NS[2]}" env DSLAUNCH_SECRET_FILE="$work/wrong" "$DSLAUNCH" $(args 2) -- true \
  >"$work/w2.out" 2>&1
rc=$?
[ $rc -eq 5 ] || { cat "$work/w2.out"; fail "wrong secret: expected exit 5, got $rc"; }
grep -q "DSLAUNCH_SECRET_FILE differs from node 0's" "$work/w2.out" || { cat "$work/w2.out"; fail "wrong secret: no clear message"; }
timeout 60 bash -c "$(declare -f node args); $(declare -p NS ADDR work DSLAUNCH PORT); node 2 -- \$(args 2) -- true" \
  >"$work/w2b.out" 2>&1 || fail "node 2 with the right secret did not end well"
wait $p0; rc=$?
wait $p1
[ $rc -eq 0 ] || { cat "$work/w0.out"; fail "wrong secret: the job did not go on (exit $rc)"; }
[ "$(grep -c ' ok$' "$work/w0.out")" -eq 6 ] || fail "wrong secret: not all 6 workers ran"

echo "== no secret file off loopback, a secret others can read: refused before starting"
out=$(ip netns exec "${NS[0]}" "$DSLAUNCH" $(args 0) -- true 2>&1); rc=$?
[ $rc -eq 2 ] && [[ "$out" == *DSLAUNCH_SECRET_FILE* ]] || fail "no secret: expected exit 2 naming DSLAUNCH_SECRET_FILE: $rc $out"
cp "$work/secret" "$work/open"; chmod 644 "$work/open"
out=$(ip netns exec "${NS[0]}" env DSLAUNCH_SECRET_FILE="$work/open" "$DSLAUNCH" $(args 0) -- true 2>&1); rc=$?
[ $rc -eq 2 ] && [[ "$out" == *"chmod 600"* ]] || fail "readable secret: expected exit 2 saying chmod 600: $rc $out"

echo "== node 0 killed mid-job: the others end (exit 4), nothing is left"
node 1 -- $(args 1) -- sh -c "touch $work/up-\$RANK; exec sleep 300" >"$work/k1.out" 2>&1 &
p1=$!
node 2 -- $(args 2) -- sh -c "touch $work/up-\$RANK; exec sleep 300" >"$work/k2.out" 2>&1 &
p2=$!
node 0 -- $(args 0) -- sh -c "touch $work/up-\$RANK; exec sleep 300" >"$work/k0.out" 2>&1 &
p0=$!
all_up() { [ "$(ls "$work"/up-* 2>/dev/null | wc -l)" -eq 6 ]; }
if wait_for 60 all_up; then
  # Everything of node 0's namespace but its sshd: dslaunch, its agent, the workers.
  for p in $(ip netns pids "${NS[0]}"); do [ "$p" = "$(cat "$C/pids/sshd-0.pid")" ] || kill -9 "$p" 2>/dev/null; done
  wait $p1; r1=$?
  wait $p2; r2=$?
  [ $r1 -eq 4 ] && [ $r2 -eq 4 ] || fail "node 0 lost: expected exit 4 on nodes 1 and 2, got $r1 and $r2"
  wait_for 30 no_leftovers || { leftovers >/dev/null; fail "node 0 lost: processes left"; }
else
  cat "$work"/k?.out; fail "node 0 lost: the workers did not all start"
  kill $p0 $p1 $p2 2>/dev/null
fi
wait $p0 2>/dev/null

[ $fails -eq 0 ] && echo "per_node_test: all checks passed"
exit $((fails > 0))
