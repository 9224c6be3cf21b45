#!/bin/bash
# Elastic start over SSH: one of 3 namespaces has its sshd stopped.
# Run inside tests/cluster/with-cluster (which tears down).
#   elastic_start_test.sh DSLAUNCH
# Checks: elastic.min_nodes 2 -> one line naming the host and "connection
# refused", the job runs on the 2 others with dense ranks, WORLD_SIZE 4, exit
# 0; min_nodes 3 -> fails naming the host and "connection refused"; the job
# file's ssh: section (strict_host_key_checking, connect_timeout, port) is used
# and its host key policy beats DSLAUNCH_SSH_STRICT_HOST_KEY_CHECKING.
set -uo pipefail
DSLAUNCH=$1
C=${DSLAUNCH_TEST_CLUSTER:?run me inside tests/cluster/with-cluster}
work=$(mktemp -d /tmp/dsl-elastic.XXXXXX)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/../test_util/preamble.sh"
. "$(dirname "$0")/netns_lib.sh"
read_cluster
cd "$work"

# Stop node 1's sshd (the middle host: the survivors' ranks must close the gap).
pidf="$C/pids/sshd-1.pid"
pid=$(cat "$pidf")
kill "$pid"
for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && { echo "FAIL: sshd $pid did not stop" >&2; exit 1; }
rm -f "$pidf"  # so teardown never signals a reused pid
down=${ADDR[1]}

job() {  # $1 = extra job-file lines
  cat >"$work/job.yaml" <<YAML
command: 'echo "R=\$RANK W=\$WORLD_SIZE N=\$GROUP_RANK G=\$GROUP_WORLD_SIZE M=\$MASTER_ADDR H=\$(hostname -I | cut -d" " -f1)"'
$1
YAML
}

echo "== min_nodes 2: runs on the 2 reachable hosts"
job $'elastic:\n  min_nodes: 2\nssh:\n  strict_host_key_checking: yes\n  connect_timeout: 5s'
out=$(timeout 60 "$DSLAUNCH" --hostfile "$C/hostfile.ip" --launcher ssh "$work/job.yaml" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "min_nodes 2: exited $rc"
[ "$(grep -ci "$down:.*connection refused" <<<"$out")" -eq 1 ] || fail "min_nodes 2: no single line naming $down and 'connection refused'"
[ "$(grep -c ' W=4 ' <<<"$out")" -eq 4 ] || fail "min_nodes 2: expected 4 workers with WORLD_SIZE=4"
for r in 0 1 2 3; do
  line=$(grep "R=$r W=" <<<"$out" | head -n1)
  node=$((r / 2)); host=${ADDR[$((node == 0 ? 0 : 2))]}
  [[ "$line" == *"N=$node G=2 M=${ADDR[0]} H=$host"* ]] || fail "rank $r: expected node $node on $host: $line"
done
grep -q "H=$down" <<<"$out" && fail "a worker ran on the stopped host"

if command -v pdsh >/dev/null; then
  echo "== min_nodes 2 with --launcher pdsh"
  out=$(timeout 60 "$DSLAUNCH" --hostfile "$C/hostfile.ip" --launcher pdsh "$work/job.yaml" 2>&1)
  rc=$?
  echo "$out"
  [ $rc -eq 0 ] || fail "pdsh, min_nodes 2: exited $rc"
  [ "$(grep -c ' W=4 N=' <<<"$out")" -eq 4 ] || fail "pdsh, min_nodes 2: expected 4 workers with WORLD_SIZE=4"
fi

echo "== min_nodes 3: fails, naming the host"
job $'elastic:\n  min_nodes: 3'
out=$(timeout 60 "$DSLAUNCH" --hostfile "$C/hostfile.ip" --launcher ssh "$work/job.yaml" 2>&1)
rc=$?
echo "$out"
[ $rc -ne 0 ] || fail "min_nodes 3: exited 0"
grep -qi "$down.*connection refused" <<<"$out" || fail "min_nodes 3: the output does not name $down and 'connection refused'"
grep -q "R=" <<<"$out" && fail "min_nodes 3: workers ran"

echo "== min_nodes 2 but 2 hosts down: fails with one line per host"
job $'elastic:\n  min_nodes: 2\nssh:\n  port: 2299'
out=$(timeout 60 "$DSLAUNCH" --hostfile "$C/hostfile.ip" --launcher ssh "$work/job.yaml" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 1 ] || fail "ssh.port 2299: expected exit 1, got $rc"
[ "$(grep -ci "connection refused" <<<"$out")" -eq 3 ] || fail "ssh.port 2299: expected 3 hosts refused (the job file's port was not used?)"
grep -q "0 of 3 hosts reachable, elastic.min_nodes is 2" <<<"$out" || fail "ssh.port 2299: no count in the error"

echo "== dslaunch check with the job file: its ssh.port is used too"
out=$(timeout 60 "$DSLAUNCH" check --hostfile "$C/hostfile.ip" "$work/job.yaml" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 1 ] || fail "check, ssh.port 2299: expected exit 1, got $rc"
[ "$(grep -ci "connection refused" <<<"$out")" -eq 3 ] || fail "check: the job file's ssh.port was not used"

echo "== --ssh_port beats the job file's ssh.port"
job $'elastic:\n  min_nodes: 2\nssh:\n  port: 2299'
out=$(timeout 60 "$DSLAUNCH" --hostfile "$C/hostfile.ip" --launcher ssh --ssh_port 22 "$work/job.yaml" 2>&1)
rc=$?
[ $rc -eq 0 ] || { echo "$out"; fail "--ssh_port 22: exited $rc"; }

echo "== ssh.strict_host_key_checking in the job file wins over DSLAUNCH_SSH_STRICT_HOST_KEY_CHECKING"
# The cluster's ssh config with an empty known_hosts; only the two live hosts.
sed "s|UserKnownHostsFile .*|UserKnownHostsFile $work/known_hosts|" "$C/ssh_config" >"$work/ssh_config"
: >"$work/known_hosts"
grep -v "^$down " "$C/hostfile.ip" >"$work/hostfile.up"
job $'ssh:\n  strict_host_key_checking: yes'
out=$(DSLAUNCH_SSH_CONFIG=$work/ssh_config DSLAUNCH_SSH_STRICT_HOST_KEY_CHECKING=accept-new \
  timeout 60 "$DSLAUNCH" --hostfile "$work/hostfile.up" --launcher ssh "$work/job.yaml" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 1 ] || fail "policy yes, unknown keys: expected exit 1, got $rc"
grep -q "host key verification failed" <<<"$out" || fail "policy yes: no host key message"
[ -s "$work/known_hosts" ] && fail "policy yes: known_hosts was written"
job $'ssh:\n  strict_host_key_checking: accept-new'
out=$(DSLAUNCH_SSH_CONFIG=$work/ssh_config DSLAUNCH_SSH_STRICT_HOST_KEY_CHECKING=yes \
  timeout 60 "$DSLAUNCH" --hostfile "$work/hostfile.up" --launcher ssh "$work/job.yaml" 2>&1)
rc=$?
[ $rc -eq 0 ] || { echo "$out"; fail "policy accept-new over env yes: exited $rc"; }
[ "$(wc -l <"$work/known_hosts")" -ge 2 ] || fail "accept-new: the two hosts' keys were not added"

[ $fails -eq 0 ] && echo "elastic_start_test: all checks passed"
exit $((fails > 0))
