#!/bin/bash
# torchrun's own multi-node recipe on the netns cluster (3 namespaces, no ssh
# used): the same dslaunch command with --rdzv-endpoint and no --node_rank in
# every namespace; the node that owns the endpoint's address hosts, the
# others get their rank as they join.
#   rdzv_test.sh DSLAUNCH     (inside tests/cluster/with-cluster)
# Checks: --nnodes 3 with the nodes started in random order forms one job
# (every node prints the same job id, node 0 is the endpoint's node); a failed
# job ends every node's dslaunch with its exit status; --nnodes
# 2:3: two nodes start after the last call, a third started late joins at
# the next generation, a killed node leaves the job going on smaller, and
# every node exits 0 at the end; an endpoint nobody serves is an error naming
# it, in bounded time; a node with another secret is refused (exit 5) and a
# host whose nodes never come fails naming who joined; two nodes on one
# machine (loopback, no secret file): the first to bind hosts, the other
# joins with the secret it publishes; nothing is left over.
set -uo pipefail
. "$(cd "$(dirname "$0")" && pwd)/netns_lib.sh"
DSLAUNCH=$(readlink -f "$1")
C=${DSLAUNCH_TEST_CLUSTER:?run me inside tests/cluster/with-cluster}
work=$(mktemp -d /tmp/dsl-rdzv.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$work"; }
trap cleanup EXIT
. "$(dirname "$0")/../test_util/preamble.sh"
read_cluster
keep_pids() { cat "$C/pids/sshd-$1.pid"; }
cd "$work"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/secret"
chmod 600 "$work/secret"
PORT=29711

# node I SECRET OUT args...: the same dslaunch in namespace I, in the background.
node() {
  local i=$1 secret=$2 out=$3; shift 3
  ip netns exec "${NS[$i]}" env DSLAUNCH_SECRET_FILE="$secret" "$DSLAUNCH" --nproc_per_node 1 \
    --rdzv-backend c10d --rdzv-endpoint "${ADDR[0]}:$PORT" "$@" >"$out" 2>&1 &
  pids+=($!)
}
job_id() { sed -n 's/.*dslaunch: job \([0-9a-f]*\):.*/\1/p' "$1" | head -1; }
# have GLOB N: N marker files match GLOB in $work.
have() { [ "$(ls "$work"/$1 2>/dev/null | wc -l)" -eq "$2" ]; }

echo "== --nnodes 3, the nodes started in random order: one job"
ENVLINE='echo "R=$RANK W=$WORLD_SIZE N=$GROUP_RANK A=$(ip -4 -o addr show eth0 | sed -n "s/.* inet \([0-9.]*\).*/\1/p")"'
for i in $(shuf -e 0 1 2); do node "$i" "$work/secret" "$work/f$i.out" --nnodes 3 -- sh -c "$ENVLINE"; done
rc=()
for p in "${pids[@]}"; do wait "$p"; rc+=($?); done
pids=()
[ "${rc[*]}" = "0 0 0" ] || { cat "$work"/f?.out; fail "--nnodes 3: exit codes ${rc[*]}"; }
for r in 0 1 2; do
  grep -q "R=$r W=3 N=$r " "$work/f0.out" || fail "--nnodes 3: rank $r missing on the host: $(cat "$work/f0.out")"
done
grep -q "R=0 W=3 N=0 A=${ADDR[0]}\$" "$work/f0.out" || fail "--nnodes 3: node 0 is not the endpoint's node"
id0=$(job_id "$work/f0.out")
[ -n "$id0" ] && [ "$(job_id "$work/f1.out")" = "$id0" ] && [ "$(job_id "$work/f2.out")" = "$id0" ] ||
  fail "--nnodes 3: job ids differ: '$id0' '$(job_id "$work/f1.out")' '$(job_id "$work/f2.out")'"
grep -q "this node hosts the rendezvous ${ADDR[0]}:$PORT as node 0" "$work/f0.out" || fail "the host did not say so"

echo "== a failed job: every node exits with its status"
node 1 "$work/secret" "$work/x1.out" --nnodes 2 -- sh -c 'if [ "$RANK" = 1 ]; then exit 3; fi; exec sleep 60'
node 0 "$work/secret" "$work/x0.out" --nnodes 2 -- sh -c 'if [ "$RANK" = 1 ]; then exit 3; fi; exec sleep 60'
rc=()
for p in "${pids[@]}"; do wait "$p"; rc+=($?); done
pids=()
[ "${rc[*]}" = "3 3" ] || { cat "$work"/x?.out; fail "failed job: exit codes ${rc[*]}, expected 3 3"; }

echo "== --nnodes 2:3: start after the last call, a late node joins, a killed one leaves"
# Each worker marks generation-rank-worldsize, then waits for the test's go.
W="touch $work/g\$DSLAUNCH_GENERATION-\$RANK-\$WORLD_SIZE; while [ ! -e $work/go ]; do sleep 0.1; done"
EL=(--nnodes 2:3 --max-restarts 3 --rdzv-conf last_call_timeout=1)
node 0 "$work/secret" "$work/e0.out" "${EL[@]}" -- sh -c "$W"; p0=${pids[-1]}
node 1 "$work/secret" "$work/e1.out" "${EL[@]}" -- sh -c "$W"; p1=${pids[-1]}
wait_for 30 have 'g0-*-2' 2 || fail "2:3: generation 0 did not start on 2 nodes"
node 2 "$work/secret" "$work/e2.out" "${EL[@]}" -- sh -c "$W"; p2=${pids[-1]}
wait_for 30 have 'g1-*-3' 3 || { cat "$work"/e?.out; fail "2:3: the late node did not join at generation 1"; }
for p in $(ip netns pids "${NS[2]}"); do [ "$p" = "$(keep_pids 2)" ] || kill -9 "$p" 2>/dev/null; done
wait_for 30 have 'g2-*-2' 2 || { cat "$work/e0.out"; fail "2:3: no generation 2 on the 2 nodes left"; }
touch "$work/go"
wait "$p0"; r0=$?
wait "$p1"; r1=$?
wait "$p2"
pids=()
[ $r0 -eq 0 ] && [ $r1 -eq 0 ] || { cat "$work/e0.out"; fail "2:3: exit codes $r0 $r1, expected 0 0"; }
grep -q "starting on 2 of at most 3 nodes (--nnodes 2:3, last call 1 s over)" "$work/e0.out" || fail "2:3: no start line"
grep -q "restart 1/3: generation 1 on 3 nodes, world size 3, after .* joined" "$work/e0.out" || fail "2:3: no join restart"
grep -q "restart 2/3: generation 2 on 2 nodes, world size 2" "$work/e0.out" || fail "2:3: no restart after the kill"
id=$(job_id "$work/e0.out")
[ "$(job_id "$work/e1.out")" = "$id" ] && [ "$(job_id "$work/e2.out")" = "$id" ] || fail "2:3: job ids differ"

echo "== an endpoint nobody serves: an error naming it, in bounded time"
start=$(date +%s)
out=$(timeout 30 ip netns exec "${NS[1]}" env DSLAUNCH_SECRET_FILE="$work/secret" "$DSLAUNCH" --nnodes 2 \
  --rdzv-endpoint "${ADDR[0]}:$((PORT + 1))" --rdzv-conf join_timeout=3 -- true 2>&1); rc=$?
took=$(( $(date +%s) - start ))
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "nobody there: exit $rc"
[[ "$out" == *"rendezvous ${ADDR[0]}:$((PORT + 1)): no dslaunch hosting this job answered within 3 s"* ]] ||
  fail "nobody there: $out"
[ "$took" -lt 20 ] || fail "nobody there: took $took s"

echo "== another secret is refused (exit 5); the host fails naming who joined"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/wrong"
chmod 600 "$work/wrong"
node 0 "$work/secret" "$work/s0.out" --nnodes 2 --rdzv-conf join_timeout=4 -- true; p0=${pids[-1]}
out=$(timeout 30 ip netns exec "${NS[1]}" env DSLAUNCH_SECRET_FILE="$work/wrong" "$DSLAUNCH" --nnodes 2 \
  --rdzv-endpoint "${ADDR[0]}:$PORT" --rdzv-conf join_timeout=4 -- true 2>&1); rc=$?
[ $rc -eq 5 ] && [[ "$out" == *"rendezvous ${ADDR[0]}:$PORT refused this node"* ]] ||
  fail "wrong secret: expected exit 5 and the refusal, got $rc: $out"
wait "$p0"; rc=$?
pids=()
[ $rc -eq 1 ] && grep -q "1 of the 2 nodes needed joined within 4 s: .* (${ADDR[0]})" "$work/s0.out" ||
  { cat "$work/s0.out"; fail "lonely host: expected exit 1 naming who joined, got $rc"; }

echo "== two nodes on one machine (loopback, no secret file): the first to bind hosts, the other joins"
for k in 1 2; do
  ip netns exec "${NS[0]}" "$DSLAUNCH" --nnodes 2 --nproc_per_node 1 --rdzv-endpoint "127.0.0.1:$PORT" -- \
    sh -c 'echo "R=$RANK W=$WORLD_SIZE"' >"$work/l$k.out" 2>&1 &
  pids+=($!)
done
rc=()
for p in "${pids[@]}"; do wait "$p"; rc+=($?); done
pids=()
hosts=$(grep -l "this node hosts the rendezvous 127.0.0.1:$PORT" "$work"/l?.out)
[ "${rc[*]}" = "0 0" ] && [ "$(echo "$hosts" | wc -w)" -eq 1 ] && grep -q "R=1 W=2" $hosts ||
  { cat "$work"/l?.out; fail "loopback: exit codes ${rc[*]}, hosts: $hosts"; }
[ "$(job_id "$work/l1.out")" = "$(job_id "$work/l2.out")" ] || fail "loopback: job ids differ"

wait_for 30 no_leftovers || { leftovers >/dev/null; fail "processes left"; }
[ $fails -eq 0 ] && echo "rdzv_test: all checks passed"
exit $((fails > 0))
