#!/bin/bash
# `dslaunch cluster` end to end on a real Docker daemon (run it inside
# with-docker): up with 3 nodes, status, a job whose workers must use the
# overlay interface, `docker kill` of a node and of node 0 and `docker pause`
# of a third mid-training with the job finishing on the other two from the
# shared checkpoint volume,
# Ctrl-C and kill -9 of `cluster run` leaving no process behind, then down
# leaving nothing of the cluster behind.
#   cluster_test.sh DSLAUNCH
# Times are printed, not asserted (the machine is shared).
set -uo pipefail
DSLAUNCH=$(readlink -f "$1")
source "$(dirname "$0")/../test_util/elastic_job.sh"
name=dsltest
export DSLAUNCH_CLUSTER_DIR=/tmp/dsl-docker-test-clusters
. "$(dirname "$0")/../test_util/preamble.sh"
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

# A cluster left behind by a killed earlier run is ours to remove.
"$DSLAUNCH" cluster down --name $name >/dev/null 2>&1
swarm_before=$(docker info --format '{{.Swarm.LocalNodeState}}')
gwbridge_before=$(docker network inspect docker_gwbridge >/dev/null 2>&1 && echo yes || echo no)
work=$(mktemp -d /tmp/dsl-docker.XXXXXX)
cleanup() {
  "$DSLAUNCH" cluster down --name $name >/dev/null 2>&1
  rm -rf "$work" "$DSLAUNCH_CLUSTER_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cd "$work"

# Waits (up to $2 s) for `$1` to succeed; 1 if it never does.
wait_until() {
  local deadline=$(($(date +%s) + $2))
  while [ "$(date +%s)" -lt "$deadline" ]; do eval "$1" && return 0; sleep 0.1; done
  return 1
}
in_controller() { docker exec $name-controller sh -c "$1"; }
# Every process left in the cluster's containers apart from init, sshd, sleep and ps.
leftovers() {
  local c
  for c in $name-controller $name-node-1 $name-node-2 $name-node-3; do
    docker exec "$c" ps -eo comm= 2>/dev/null | grep -vxE 'docker-init|sshd|sleep|ps' | sed "s/^/$c: /"
  done
}

echo "== up"
t0=$(now)
"$DSLAUNCH" cluster up --name $name --nodes 3 --workspace "$work" >up.out 2>&1 || { cat up.out; fail "cluster up"; exit 1; }
cat up.out
echo "up took $(since "$t0") s"
"$DSLAUNCH" cluster up --name $name >up2.out 2>&1 || { cat up2.out; fail "a second cluster up (must be a no-op)"; }

echo "== status"
"$DSLAUNCH" cluster status --name $name >status.out 2>&1 || fail "cluster status exited $?"
cat status.out
grep -q "3 of 3 hosts ready" status.out || fail "status: not every node ready"

echo "== the workers use the overlay"
subnet=$(docker network inspect $name-net --format '{{(index .IPAM.Config 0).Subnet}}')
cat >iface.yaml <<'YAML'
procs_per_node: 1
command: ["/bin/sh", "-c", "echo IFACE $RANK $GLOO_SOCKET_IFNAME $NCCL_SOCKET_IFNAME $(ip -o -4 addr show dev $GLOO_SOCKET_IFNAME | awk '{print $4}') mtu $(cat /sys/class/net/$GLOO_SOCKET_IFNAME/mtu)"]
YAML
"$DSLAUNCH" cluster run --name $name iface.yaml >iface.out 2>&1 || fail "interface job exited $?"
grep IFACE iface.out
[ "$(grep -c ' IFACE ' iface.out)" -eq 3 ] || fail "expected 3 ranks to report their interface"
/usr/bin/python3 - "$subnet" iface.out <<'PY' || fail "a worker's interface is not on the overlay $subnet"
import ipaddress, sys
net = ipaddress.ip_network(sys.argv[1])
for line in open(sys.argv[2]):
    if " IFACE " not in line:
        continue
    w = line.split()
    rank, gloo, nccl, addr = w[2], w[3], w[4], w[5]
    if gloo != nccl or ipaddress.ip_interface(addr).ip not in net:
        sys.exit(f"rank {rank}: GLOO/NCCL_SOCKET_IFNAME {gloo}/{nccl} holds {addr}, not in the overlay {net}")
PY

# A training job checkpointing into the shared volume every 50 steps.
train_job() { elastic_job_yaml "/checkpoints/$1" 50 2 >"$1.yaml"; }  # $1 = checkpoint folder name

kill_case() {  # $1 = the node container to kill
  local victim=$1 ck=ck-$1
  echo "== docker kill $victim mid-training"
  train_job "$ck"
  "$DSLAUNCH" cluster run --name $name "$ck.yaml" >"$ck.out" 2>&1 &
  local pid=$!
  if ! wait_until "in_controller 'ls /checkpoints/$ck/step_*/manifest.json' >/dev/null 2>&1" 60; then
    fail "$victim: no checkpoint within 60 s"; kill "$pid"; wait "$pid"; cat "$ck.out"; return
  fi
  local t0
  t0=$(now)
  docker kill "$victim" >/dev/null
  wait "$pid"
  local rc=$?
  grep -v "epoch" "$ck.out"
  echo "$victim: kill -> job done $(since "$t0") s"
  [ $rc -eq 0 ] || fail "$victim: cluster run exited $rc"
  grep -q "restart 1/1: generation 1 on 2 nodes, world size 2, after host $victim" "$ck.out" ||
    fail "$victim: no restart on the 2 others naming $victim"
  grep -q "saved by 3 ranks at ZeRO stage 2" "$ck.out" || fail "$victim: did not resume the 3-rank checkpoint"
  grep -q "all 2 workers exited 0, after 1 restart" "$ck.out" || fail "$victim: no success summary"
  echo "== cluster up --replace brings $victim back"
  "$DSLAUNCH" cluster up --name $name --replace >replace.out 2>&1 || { cat replace.out; fail "up --replace after killing $victim"; }
}
kill_case $name-node-2
kill_case $name-node-1  # node 0: rank 0 and MASTER_ADDR were there

# A frozen node closes nothing: the heartbeat finds it.
echo "== docker pause $name-node-3 mid-training"
train_job ck-pause
"$DSLAUNCH" cluster run --name $name ck-pause.yaml >ck-pause.out 2>&1 &
pid=$!
if wait_until "in_controller 'ls /checkpoints/ck-pause/step_*/manifest.json' >/dev/null 2>&1" 60; then
  t0=$(now)
  docker pause $name-node-3 >/dev/null
  wait "$pid"
  rc=$?
  echo "pause: -> job done $(since "$t0") s"
  grep -v epoch ck-pause.out
  [ $rc -eq 0 ] || fail "pause: cluster run exited $rc"
  grep -q "after host $name-node-3: agent lost: no heartbeat for 2s" ck-pause.out ||
    fail "pause: not found by the heartbeat"
  grep -q "all 2 workers exited 0, after 1 restart" ck-pause.out || fail "pause: no success summary"
else
  fail "pause: no checkpoint within 60 s"; kill "$pid"; wait "$pid"
fi
docker unpause $name-node-3 >/dev/null
# Thawed, its agent finds the coordinator gone and ends its worker and itself.
wait_until '[ -z "$(leftovers)" ]' 30 || fail "pause: left behind after unpausing: $(leftovers | tr '\n' ' ')"

stop_case() {  # $1 = INT | KILL: what `cluster run` gets
  echo "== SIG$1 to cluster run"
  train_job "stop-$1"
  sed -i 's/max_steps: 6000/max_steps: 10000000/' "stop-$1.yaml"
  "$DSLAUNCH" cluster run --name $name "stop-$1.yaml" >"stop-$1.out" 2>&1 &
  local pid=$!
  wait_until "in_controller 'ls /checkpoints/stop-$1/step_*/manifest.json' >/dev/null 2>&1" 60 ||
    fail "SIG$1: the job did not start training"
  local t0
  t0=$(now)
  kill -"$1" "$pid"
  wait "$pid"
  local rc=$?
  wait_until '[ -z "$(leftovers)" ]' 30 || fail "SIG$1: left behind after 30 s: $(leftovers | tr '\n' ' ')"
  echo "SIG$1: cluster run exited $rc; nothing left in any container $(since "$t0") s after the signal"
  tail -3 "stop-$1.out"
  if [ "$1" = INT ]; then
    [ $rc -eq 130 ] || fail "SIGINT: cluster run exited $rc, expected 130"
    grep -q "dslaunch received SIGINT; every worker was stopped" "stop-$1.out" || fail "SIGINT: no stop summary"
  fi
}
stop_case INT
stop_case KILL

echo "== down"
"$DSLAUNCH" cluster down --name $name || fail "cluster down exited $?"
left=$(docker ps -aq --filter label=org.dslaunch.cluster=$name)
[ -z "$left" ] || fail "containers left: $left"
docker network inspect $name-net >/dev/null 2>&1 && fail "network $name-net left"
for v in $name-checkpoints $name-job; do docker volume inspect "$v" >/dev/null 2>&1 && fail "volume $v left"; done
docker image inspect dslaunch-cluster-$name:latest >/dev/null 2>&1 && fail "image left"
[ "$(docker info --format '{{.Swarm.LocalNodeState}}')" = "$swarm_before" ] || fail "swarm state is not '$swarm_before' as before"
gwbridge_after=$(docker network inspect docker_gwbridge >/dev/null 2>&1 && echo yes || echo no)
[ "$gwbridge_after" = "$gwbridge_before" ] || fail "docker_gwbridge: existed before: $gwbridge_before, after: $gwbridge_after"
[ -e "$DSLAUNCH_CLUSTER_DIR/$name" ] && fail "state folder left"
"$DSLAUNCH" cluster down --name $name >/dev/null || fail "a second down must be a no-op"

[ $fails -eq 0 ] && echo "docker cluster: all checks passed"
exit $((fails > 0))
