#!/bin/bash
# torchrun's contract where it is explicit (issue 44; the cases come from
# torch's own launcher tests), with tests/torch/bind_probe.py on 2 local
# nodes, 1 rank each:
#   1. --master_port P: every rank sees MASTER_PORT=P, rank 0 included, a
#      Gloo group forms over env:// (rank 0's store on P), and a rank 0 that
#      binds (MASTER_ADDR, P) itself serves every other rank;
#   2. the port ours to choose (relay on) and node rank 0 on 127.0.0.2, so
#      that MASTER_ADDR is not the loopback: a rank 0 that binds
#      (MASTER_ADDR, its MASTER_PORT) itself is reached through the relay
#      (it used to time out: the relay dialled 127.0.0.1 only).
#   master_port_test.sh DSLAUNCH
set -uo pipefail
DSLAUNCH=$(readlink -f "$1")
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../..
PY=/usr/bin/python3
if ! "$PY" -c 'import torch.distributed' 2>/dev/null; then
  "$root/scripts/install-deps" --torch >&2 || { echo "SKIP: python3-torch could not be installed" >&2; exit 77; }
fi
work=$(mktemp -d /tmp/dsl-mport.XXXXXX)
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
cd "$work"
cp "$here/bind_probe.py" .
H="$root/hostfiles/local"
# A port free now (the kernel's choice); dslaunch reserves it as given.
P=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])')

for mode in store bind; do
  echo "== --master_port $P ($mode): every rank's MASTER_PORT is $P, rank 0's too"
  out=$(MODE=$mode timeout 120 "$DSLAUNCH" --hostfile "$H" --num_nodes 2 --num_gpus 1 --master_port "$P" -- \
    "$PY" -u bind_probe.py 2>&1)
  rc=$?
  echo "$out"
  [ $rc -eq 0 ] || fail "$mode with --master_port exited $rc"
  for r in 0 1; do
    grep -q "rank=$r master_addr=[0-9.]* master_port=$P$" <<<"$out" || fail "$mode: rank $r does not see MASTER_PORT=$P"
  done
  if [ $mode = store ]; then
    for r in 0 1; do grep -q "rank=$r allreduce=2" <<<"$out" || fail "store: rank $r's all-reduce did not give 2"; done
  else
    grep -q "rank=1 got='hello from rank 0'" <<<"$out" || fail "bind: rank 1 was not served by rank 0 on ($P)"
  fi
done

echo "== the relay (port ours), MASTER_ADDR 127.0.0.2: rank 0 binding (MASTER_ADDR, MASTER_PORT) is reached"
out=$(MODE=bind timeout 120 "$DSLAUNCH" --hostfile "$H" --exclude 127.0.0.1 --num_gpus 1 -- "$PY" -u bind_probe.py 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "the relay run with rank 0 bound to MASTER_ADDR exited $rc"
grep -q "rank=0 master_addr=127.0.0.2 " <<<"$out" || fail "MASTER_ADDR is not 127.0.0.2: the case is not the one meant"
for r in 1; do grep -q "rank=$r got='hello from rank 0'" <<<"$out" || fail "rank $r was not relayed to rank 0 on MASTER_ADDR"; done
p0=$(sed -n 's/.*rank=0 .*master_port=\([0-9]*\)$/\1/p' <<<"$out")
p1=$(sed -n 's/.*rank=1 .*master_port=\([0-9]*\)$/\1/p' <<<"$out")
[ -n "$p0" ] && [ "$p0" != "$p1" ] || fail "with the port ours, rank 0's MASTER_PORT ($p0) should be behind the relay's ($p1)"

[ $fails -eq 0 ] && echo "master_port_test: all checks passed"
exit $((fails > 0))
