#!/bin/bash
# Taking a partitioned node back never stops the coordinator (issue 32 item
# 7). Three namespaces, one worker each, printing "tick RANK GENERATION TIME"
# every 50 ms; node 2's link goes down: it is lost, the job restarts on nodes
# 0 and 1, and the fleet tries to start a new agent on node 2 until one
# registers. Once a try has failed, the link comes back and the next try
# takes the node back, ending the old SSH session of its first agent. That
# session stays dark after the link is back, as it would for seconds while
# its TCP backs off: its packets are dropped in node 2's namespace, so that
# the test does not hang on when the retransmission timer fires.
# While that happens the healthy ranks' lines must keep reaching dslaunch's
# output: every line is stamped as it arrives; its lag (arrival minus the
# time the worker printed it) stays under 1 s and consecutive lines of one
# rank arrive less than 1 s apart, and the coordinator never reports that it
# did not run. Only lines of generation 1 (after the restart, through the
# take-back until the workers are told to end) are judged.
# Run inside tests/cluster/with-cluster (which tears down).
#   takeback_test.sh DSLAUNCH
set -uo pipefail
DSLAUNCH=$(readlink -f "$1")
C=${DSLAUNCH_TEST_CLUSTER:?run me inside tests/cluster/with-cluster}
work=$(mktemp -d /tmp/dsl-takeback.XXXXXX)
name=$(basename "$C")
link="dsl${name}v2a"
pid="" stamper=""
cleanup() {
  ip link set "$link" up 2>/dev/null
  touch "$work/stop"
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid"
  [ -n "$stamper" ] && wait "$stamper"
  rm -rf "$work"
}
trap cleanup EXIT
. "$(dirname "$0")/../test_util/preamble.sh"
. "$(dirname "$0")/netns_lib.sh"
read_cluster
cd "$work"
printf '%s slots=1\n' "${ADDR[@]}" >hostfile
cat >worker.sh <<EOF
while [ ! -e $work/stop ]; do echo "tick \$RANK \$DSLAUNCH_GENERATION \$EPOCHREALTIME"; sleep 0.05; done
EOF
cat >job.yaml <<EOF
command: [/bin/bash, $work/worker.sh]
elastic: {max_restarts: 1, min_nodes: 2, heartbeat_interval: 500ms, heartbeat_timeout: 2s}
ssh: {strict_host_key_checking: yes, connect_timeout: 2s}
EOF

# Waits (up to $2 s) for a line matching $1 in the output.
wait_line() {
  for _ in $(seq $(($2 * 50))); do
    grep -q -- "$1" out 2>/dev/null && return 0
    sleep 0.02
  done
  fail "no line matching '$1' within $2 s"
  return 1
}
# Waits (up to $3 s) until rank $1 of generation 1 has printed $2 lines after the take-back.
wait_ticks_after_rejoin() {
  for _ in $(seq $(($3 * 50))); do
    [ "$(sed -n '/rejoined/,$p' out | grep -c " tick $1 1 ")" -ge "$2" ] && return 0
    sleep 0.02
  done
  fail "rank $1 printed fewer than $2 lines in $3 s after the take-back"
}

# Every line of dslaunch's output, stamped with the time it arrived.
mkfifo pipe
while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done <pipe >out &
stamper=$!
"$DSLAUNCH" --hostfile hostfile --launcher ssh job.yaml >pipe 2>&1 &
pid=$!
wait_line " tick 2 0 " 30 || exit 1
# The first agent's session: node 2's sshd end of the launcher's connection.
mapfile -t old < <(ip netns exec "${NS[2]}" ss -tnH state established '( sport = :22 )' |
  awk '{n = split($4, a, ":"); print a[n]}')
[ "${#old[@]}" -eq 1 ] || { fail "expected one ssh session on node 2, found ${#old[@]}"; exit 1; }
ip link set "$link" down
wait_line "restart 1/1: generation 1 on 2 nodes" 30
wait_line "generation 1: all 2 workers running" 30
wait_line "${ADDR[2]} is still lost" 30  # a try failed
for rule in "INPUT -p tcp --dport 22 --sport ${old[0]}" "OUTPUT -p tcp --sport 22 --dport ${old[0]}"; do
  ip netns exec "${NS[2]}" iptables -A $rule -j DROP || { fail "iptables in ${NS[2]}"; exit 1; }
done
ip link set "$link" up
ip -n "${NS[2]}" neigh flush all
wait_line "${ADDR[2]} rejoined" 60
wait_ticks_after_rejoin 0 40 30
wait_ticks_after_rejoin 1 40 30
touch stop
wait "$pid"
rc=$?
pid=""
wait "$stamper"
stamper=""
cat out
[ "$rc" -eq 0 ] || fail "dslaunch exited $rc"
grep -q "all 2 workers exited 0, after 1 restart" out || fail "no success summary"
[ "$(grep -c "${ADDR[2]} rejoined" out)" -eq 1 ] || fail "node 2 was not taken back exactly once"
grep -q "already registered" out && fail "a new agent replaced the one that had taken node 2 back"
grep -q "did not run for" out && fail "the coordinator stopped: $(grep 'did not run for' out)"
# Per rank of generation 1: the largest lag and the largest gap between arrivals.
report=$(awk '$3 == "tick" && $5 == 1 {
    r = $4; lag = $1 - $6; if (lag > maxlag[r]) maxlag[r] = lag
    if (r in last && $1 - last[r] > maxgap[r]) maxgap[r] = $1 - last[r]
    last[r] = $1; n[r]++
  }
  END { for (r in n) printf "%s %d %.3f %.3f\n", r, n[r], maxlag[r], maxgap[r] }' out | sort)
echo "rank lines max-lag-s max-gap-s (generation 1)"
echo "$report"
[ "$(wc -l <<<"$report")" -eq 2 ] || fail "expected lines of 2 ranks in generation 1"
while read -r rank n lag gap; do
  awk -v l="$lag" 'BEGIN { exit !(l < 1.0) }' || fail "rank $rank: a line reached dslaunch's output ${lag} s after it was printed"
  awk -v g="$gap" 'BEGIN { exit !(g < 1.0) }' || fail "rank $rank: no line for ${gap} s"
done <<<"$report"
[ $fails -eq 0 ] && echo "take-back: all checks passed"
exit $((fails > 0))
