#!/bin/bash
# The launch tree (--fanout-tree) on the netns cluster: 7 nodes, width 2, so
# the launcher starts n0 and n1, n0 starts n2 and n3, n1 starts n4 and n5,
# n2 starts n6 (each with its own ssh, in its own namespace). Run inside
# tests/cluster/with-cluster (which tears down).
#   tree_test.sh DSLAUNCH
# Checks:
#   shape:     every worker's agent was started by the node the tree says
#              (its --tree-parent), WORLD_SIZE 7, exit 0, nothing left;
#   unreachable child: n0 cannot reach n3 (a prohibit route in n0's
#              namespace): n0 reports it, the launcher starts n3 itself and
#              n3 then starts nobody (a leaf); the job runs on all 7;
#   SIGKILL to dslaunch: every process of the job on every node is gone;
#   interior node lost mid-job (every process of n1 killed): its children
#              n4 and n5 stay (their coordinator link is their supervision,
#              not n1's ssh), so the elastic restart runs on 6 nodes, not 4.
set -uo pipefail
DSLAUNCH=$(readlink -f "$1")
C=${DSLAUNCH_TEST_CLUSTER:?run me inside tests/cluster/with-cluster}
source "$(dirname "$0")/netns_lib.sh"
work=$(mktemp -d /tmp/dsl-treetest.XXXXXX)
route_set=""
cleanup() {
  [ -n "$route_set" ] && ip netns exec "${NS[0]}" ip route del prohibit "$route_set/32" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
. "$(dirname "$0")/../test_util/preamble.sh"
read_cluster
keep_pids() { [ -e "$C/pids/sshd-$1.pid" ] && cat "$C/pids/sshd-$1.pid"; }
cd "$work"
awk '{print $1" slots=1"}' "$C/nodes" >hostfile
# Each worker prints its rank, the world size and who started its agent.
show='echo "R=$RANK W=$WORLD_SIZE P=$(tr "\0" " " </proc/$PPID/cmdline | grep -o "tree-parent [0-9]*" || echo launcher)"'
parent_of() { [ "$1" -lt 2 ] && echo launcher || echo "tree-parent $(($1 / 2 - 1))"; }
count() { grep -c -- "$1" "$2" 2>/dev/null || true; }
has_lines() { [ "$(count "$1" "$2")" -eq "$3" ]; }  # PATTERN FILE N

echo "== shape"
timeout 120 "$DSLAUNCH" --hostfile hostfile --launcher ssh --fanout-tree 2 -- sh -c "$show" >out 2>&1
rc=$?
cat out
[ $rc -eq 0 ] || fail "shape: dslaunch exited $rc"
for r in 0 1 2 3 4 5 6; do
  grep -q "R=$r W=7 P=$(parent_of $r)\$" out || fail "shape: rank $r: expected W=7 and P=$(parent_of $r)"
done
wait_for 15 no_leftovers || fail "shape: processes left: $(leftovers 2>&1 >/dev/null)"

echo "== unreachable child: n0 cannot reach n3"
ip netns exec "${NS[0]}" ip route add prohibit "${ADDR[3]}/32" && route_set=${ADDR[3]}
timeout 120 "$DSLAUNCH" --hostfile hostfile --launcher ssh --fanout-tree 2 -- sh -c "$show" >out 2>&1
rc=$?
cat out
ip netns exec "${NS[0]}" ip route del prohibit "${ADDR[3]}/32" && route_set=""
[ $rc -eq 0 ] || fail "unreachable: dslaunch exited $rc"
grep -q "dslaunch: ${ALIAS[3]}: ${ALIAS[0]} could not start it (status 255: ssh: connect to host ${ADDR[3]} port 22: .*); starting it from here" out ||
  fail "unreachable: no notice naming ${ALIAS[0]}, ${ALIAS[3]} and ssh's reason"
grep -q "R=3 W=7 P=launcher\$" out || fail "unreachable: n3's agent was not started by the launcher"
for r in 0 1 2 4 5 6; do grep -q "R=$r W=7 P=$(parent_of $r)\$" out || fail "unreachable: rank $r"; done
wait_for 15 no_leftovers || fail "unreachable: processes left: $(leftovers 2>&1 >/dev/null)"

echo "== SIGKILL to dslaunch"
"$DSLAUNCH" --hostfile hostfile --launcher ssh --fanout-tree 2 -- sh -c 'echo "up R=$RANK"; exec sleep 300' >out 2>&1 &
pid=$!
wait_for 60 has_lines 'up R=' out 7 || fail "sigkill: not every worker came up: $(cat out)"
kill -9 "$pid"
wait "$pid" 2>/dev/null
wait_for 15 no_leftovers || fail "sigkill: processes left 15 s after: $(leftovers 2>&1 >/dev/null)"

echo "== interior node n1 lost mid-job"
cat >job.yaml <<'YAML'
command: [sh, -c, 'echo "up R=$RANK W=$WORLD_SIZE"; [ "$WORLD_SIZE" = 6 ] && exit 0; exec sleep 300']
elastic: {max_restarts: 1, min_nodes: 2, heartbeat_interval: 500ms, heartbeat_timeout: 2s, rejoin: false}
ssh: {strict_host_key_checking: yes}
YAML
DSLAUNCH_STOP_GRACE=500ms "$DSLAUNCH" --hostfile hostfile --launcher ssh --fanout-tree 2 job.yaml >out 2>&1 &
pid=$!
if wait_for 60 has_lines 'up R=.* W=7' out 7; then
  # The whole node at once (sshd, the agent, its ssh clients, the worker):
  # stopped first, so that none of them reacts to another's death.
  ip netns pids "${NS[1]}" | xargs -r kill -STOP
  ip netns pids "${NS[1]}" | xargs -r kill -9
  rm -f "$C/pids/sshd-1.pid"  # gone: teardown must not signal a reused pid
else
  fail "lost: not every worker came up"
  kill "$pid"
fi
timeout 60 tail --pid "$pid" -f /dev/null
wait "$pid"
rc=$?
cat out
[ $rc -eq 0 ] || fail "lost: dslaunch exited $rc"
grep -q "restart 1/1: generation 1 on 6 nodes, world size 6, after host ${ALIAS[1]}: agent lost" out ||
  fail "lost: expected the restart on the 6 nodes left (n1's children kept)"
[ "$(count 'up R=.* W=6' out)" -eq 6 ] || fail "lost: expected 6 workers in generation 1"
wait_for 15 no_leftovers || fail "lost: processes left: $(leftovers 2>&1 >/dev/null)"

[ $fails -eq 0 ] && echo "launch tree: all checks passed"
exit $((fails > 0))
