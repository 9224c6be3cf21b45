#!/bin/bash
# `dslaunch cluster` on two hosts: this machine's Docker daemon is the swarm
# manager, and a second dockerd in a network namespace (its own address, data
# root and socket) is the other host. The manager's up lists 2 remote nodes,
# the other host joins the swarm and runs `up --join` with copies of the
# manager's node keys, a 4-rank dstrain job runs across both daemons over the
# overlay, a node of the other host is killed mid-training and the job ends
# on the other 3 from the checkpoint in the (shared) workspace, and both
# downs leave nothing of the cluster behind. Run it inside with-docker.
#   hosts_test.sh DSLAUNCH
set -uo pipefail
DSLAUNCH=$(readlink -f "$1")
source "$(dirname "$0")/../test_util/elastic_job.sh"
name=dslhosts
ns=dslhostsw subnet=10.77.60
W=unix:///run/dsl-hosts-dockerd.sock
wpidfile=/run/dsl-hosts-dockerd.pid wroot=/var/lib/dsl-hosts-dockerd wexec=/run/dsl-hosts-dockerd
export DSLAUNCH_CLUSTER_DIR=/tmp/dsl-hosts-manager
wstate=/tmp/dsl-hosts-worker
. "$(dirname "$0")/../test_util/preamble.sh"
other() { DOCKER_HOST=$W DSLAUNCH_CLUSTER_DIR=$wstate "$@"; }  # a command on the other host
work=""

# Also removes what a killed earlier run left.
cleanup() {
  local pid
  pid=$(cat "$wpidfile" 2>/dev/null)
  if [ -n "$pid" ] && [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = dockerd ]; then
    other "$DSLAUNCH" cluster down --name $name >/dev/null 2>&1
    other docker swarm leave --force >/dev/null 2>&1
    kill "$pid"
    for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
  fi
  "$DSLAUNCH" cluster down --name $name >/dev/null 2>&1
  ip netns del $ns 2>/dev/null
  ip link del ${ns}h 2>/dev/null
  rm -rf "$DSLAUNCH_CLUSTER_DIR" "$wstate" "$wroot" "$wexec" "$wpidfile" ${work:+"$work"}
}
cleanup
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ "$(docker info --format '{{.Swarm.LocalNodeState}}')" != inactive ]; then
  echo "SKIP: this Docker daemon is already in a swarm; the test makes its own" >&2
  exit 77
fi
if ip -4 -o addr show | grep -q " $subnet\."; then echo "SKIP: $subnet.0/24 is in use" >&2; exit 77; fi
work=$(mktemp -d /tmp/dsl-hosts.XXXXXX)
cd "$work"

echo "== the other host: a network namespace with its own dockerd"
ip netns add $ns
ip link add ${ns}h type veth peer name eth0 netns $ns
ip addr add $subnet.1/24 dev ${ns}h
ip link set ${ns}h up
ip -n $ns addr add $subnet.2/24 dev eth0
ip -n $ns link set eth0 up
ip -n $ns link set lo up
ip -n $ns route add default via $subnet.1
# nsenter, not `ip netns exec`: dockerd needs the host's /sys with its cgroups.
nsenter --net=/run/netns/$ns dockerd --data-root $wroot --exec-root $wexec --pidfile $wpidfile -H $W \
  --iptables=false --ip-masq=false >"$work/dockerd.log" 2>&1 &
for _ in $(seq 600); do other docker info >/dev/null 2>&1 && break; sleep 0.1; done
other docker info >/dev/null 2>&1 || { tail -20 "$work/dockerd.log"; fail "the second dockerd did not start"; exit 1; }

echo "== manager: up with 2 nodes here and 2 remote"
"$DSLAUNCH" cluster up --name $name --nodes 2 --remote-nodes 2 --workspace "$work" --advertise-addr $subnet.1 \
  >up.out 2>&1 || { cat up.out; fail "manager up"; exit 1; }
cat up.out
join_line=$(grep -o 'docker swarm join --token [^ ]* [^ ]*' up.out)
[ -n "$join_line" ] || fail "up printed no swarm join line"
grep -q -- "--join --first-node 3" up.out || fail "up did not print the --join command with --first-node 3"

echo "== the other host joins"
other $join_line || { fail "swarm join"; exit 1; }
docker save dslaunch-base:bookworm | other docker load >/dev/null  # no registry: the base image by hand
mkdir -p "$wstate/$name/keys"
cp -r "$DSLAUNCH_CLUSTER_DIR/$name/keys/node" "$wstate/$name/keys/"
other "$DSLAUNCH" cluster up --name $name --join --first-node 3 --nodes 2 --workspace "$work" >join.out 2>&1 ||
  { cat join.out; fail "up --join"; exit 1; }
cat join.out
[ "$(other docker ps --filter label=org.dslaunch.cluster=$name --format '{{.Names}}' | sort | tr '\n' ' ')" = \
  "$name-anchor $name-node-3 $name-node-4 " ] || fail "the other host does not run exactly the anchor and nodes 3, 4"

echo "== status from the manager: all 4 nodes"
for _ in $(seq 30); do
  "$DSLAUNCH" cluster status --name $name >status.out 2>&1 && break
  sleep 1  # the joined nodes' sshd may still be starting: poll, with a deadline
done
cat status.out
grep -q "4 of 4 hosts ready" status.out || fail "status: not every node of both hosts ready"

echo "== a 4-rank job across both hosts; node 4 (the other host) killed mid-training"
elastic_job_yaml ckpt 50 3 >job.yaml
"$DSLAUNCH" cluster run --name $name job.yaml >job.out 2>&1 &
pid=$!
for _ in $(seq 600); do ls ckpt/step_*/manifest.json >/dev/null 2>&1 && break; sleep 0.1; done
ls ckpt/step_*/manifest.json >/dev/null 2>&1 || fail "no checkpoint within 60 s"
other docker kill $name-node-4 >/dev/null
wait "$pid"
rc=$?
grep -v epoch job.out
[ $rc -eq 0 ] || fail "the job exited $rc"
grep -q "dstrain: 4 ranks" job.out || fail "the job did not start with 4 ranks on both hosts"
grep -q "restart 1/1: generation 1 on 3 nodes, world size 3, after host $name-node-4" job.out ||
  fail "no restart on the 3 others naming $name-node-4"
grep -q "saved by 4 ranks at ZeRO stage 2" job.out || fail "did not resume the 4-rank checkpoint"

echo "== down on both hosts"
other "$DSLAUNCH" cluster down --name $name || fail "down on the other host"
[ -z "$(other docker ps -aq --filter label=org.dslaunch.cluster=$name)" ] || fail "containers left on the other host"
[ -z "$(other docker images -q --filter label=org.dslaunch.cluster=$name)" ] || fail "images left on the other host"
"$DSLAUNCH" cluster down --name $name || fail "down on the manager"
[ -z "$(docker ps -aq --filter label=org.dslaunch.cluster=$name)" ] || fail "containers left on the manager"
[ "$(docker info --format '{{.Swarm.LocalNodeState}}')" = inactive ] || fail "the manager is still in a swarm"

[ $fails -eq 0 ] && echo "docker cluster on two hosts: all checks passed"
exit $((fails > 0))
