#!/bin/bash
# A real PyTorch script (Debian's python3-torch, installed here when missing)
# under dslaunch on 2 local nodes:
#   1. torch.distributed.is_torchelastic_launched() is true, ROLE_NAME is
#      "default", torchrun's variables are there, and a Gloo group forms
#      through env:// (MASTER_ADDR/MASTER_PORT) and all-reduces;
#   2. DeepSpeed's form (PYTHON_EXEC, --deepspeed) passes --local_rank=N (right after the script),
#      torchrun's -m form does not;
#   3. rank 1 reaches MASTER_PORT before rank 0 has made its store: node 0's
#      agent relays it (store_probe.py: the connect is accepted, not refused),
#      rank 0's MASTER_PORT is its own; DSLAUNCH_STORE_RELAY=0 turns that off;
#   4. a rank that raises inside @record (with its stderr closed) makes
#      dslaunch exit 1 with the exception's message and its frames in the
#      summary, read from TORCHELASTIC_ERROR_FILE;
#   4. a rank that raises (no @record) while another dies of the closed Gloo
#      connection: the summary names the rank that raised, every run (3 runs),
#      and lists both failed ranks.
#   torch_test.sh DSLAUNCH
set -uo pipefail
DSLAUNCH=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../..
PY=/usr/bin/python3
if ! "$PY" -c 'import torch.distributed' 2>/dev/null; then
  "$root/scripts/install-deps" --torch >&2 || { echo "SKIP: python3-torch could not be installed" >&2; exit 77; }
fi
work=$(mktemp -d /tmp/dsl-torch.XXXXXX)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/../test_util/preamble.sh"
cd "$work"
cp "$here/record_error.py" "$here/collateral.py" "$here/store_probe.py" .
H="$root/hostfiles/local"

echo "== torchrun's contract: is_torchelastic_launched, ROLE_NAME, a Gloo group over env://"
out=$(timeout 120 "$DSLAUNCH" --hostfile "$H" --num_nodes 2 --num_gpus 1 -- "$PY" -u record_error.py 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "the passing run exited $rc"
for r in 0 1; do
  grep -q "rank=$r world=2 role=default run_id_set=True restarts=0/0 error_file_set=True args=$" <<<"$out" ||
    fail "rank $r: torchrun's variables missing"
  grep -q "rank=$r allreduce=3" <<<"$out" || fail "rank $r: the Gloo all-reduce did not give 3"
done

echo "== the store relay: rank 1 is accepted on MASTER_PORT before rank 0 has made its store"
mkfifo "$work/probe.fifo"
out=$(PROBE_FIFO=$work/probe.fifo timeout 120 "$DSLAUNCH" --hostfile "$H" --num_nodes 2 --num_gpus 1 -- \
  "$PY" -u store_probe.py 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "the store relay run exited $rc"
grep -q "rank=1 store_probe=accepted" <<<"$out" || fail "rank 1's connect to MASTER_PORT was not accepted before rank 0's store existed"
p0=$(sed -n 's/.*rank=0 master_port=\([0-9]*\).*/\1/p' <<<"$out")
p1=$(sed -n 's/.*rank=1 master_port=\([0-9]*\).*/\1/p' <<<"$out")
[ -n "$p0" ] && [ -n "$p1" ] && [ "$p0" != "$p1" ] || fail "rank 0's MASTER_PORT ($p0) should be its own, not the relay's ($p1)"
for r in 0 1; do grep -q "rank=$r past_barrier" <<<"$out" || fail "rank $r did not pass the barrier"; done

echo "== DSLAUNCH_STORE_RELAY=0: no relay, one MASTER_PORT, rank 0 listens on it itself"
out=$(DSLAUNCH_STORE_RELAY=0 PROBE_FIFO=$work/probe.fifo timeout 120 "$DSLAUNCH" --hostfile "$H" --num_nodes 2 \
  --num_gpus 1 -- "$PY" -u store_probe.py 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "the run without the relay exited $rc"
grep -q "rank=1 store_probe=refused" <<<"$out" || fail "without the relay, rank 1's early connect should be refused"
[ "$(grep -o 'master_port=[0-9]*' <<<"$out" | sort -u | wc -l)" -eq 1 ] || fail "without the relay, every rank has one MASTER_PORT"
for r in 0 1; do grep -q "rank=$r past_barrier" <<<"$out" || fail "rank $r did not pass the barrier (no relay)"; done

echo "== a rank that raises inside @record: its exception is in the summary"
out=$(FAIL_RANK=1 LR=3.5 timeout 120 "$DSLAUNCH" --hostfile "$H" --num_nodes 2 --num_gpus 1 -- \
  "$PY" -u record_error.py 2>&1)
rc=$?
echo "$out"
[ $rc -eq 1 ] || fail "expected exit 1 from the raising rank, got $rc"
summary=$(sed -n '/job failed/,$p' <<<"$out")
grep -q "ValueError: learning rate 3.5 is too large on rank 1" <<<"$summary" ||
  fail "the summary does not show the exception message"
grep -q "in check_learning_rate" <<<"$summary" || fail "the summary does not show the raising frame"
grep -q 'raise ValueError' <<<"$summary" || fail "the summary does not show the raising line"

echo "== DeepSpeed's script form: PYTHON_EXEC runs train.py, which gets --local_rank=N right after the script, as DeepSpeed's launcher puts it"
out=$(PYTHON_EXEC=$PY timeout 120 "$DSLAUNCH" --hostfile "$H" --num_nodes 2 --num_gpus 1 \
  record_error.py --lr 0.1 --deepspeed --deepspeed_config ds.json 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "the DeepSpeed-form run exited $rc"
for r in 0 1; do
  grep -q "rank=$r .* args=--local_rank=0 --lr 0.1 --deepspeed --deepspeed_config ds.json$" <<<"$out" ||
    fail "rank $r: expected --local_rank=0 right after the script, before its arguments"
done
echo "== torchrun's form (-m): no --local_rank"
out=$(PYTHON_EXEC=$PY timeout 120 "$DSLAUNCH" --hostfile "$H" --num_nodes 2 --num_gpus 1 -m record_error --x 1 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "the -m run exited $rc"
[ "$(grep -c 'args=--x 1$' <<<"$out")" -eq 2 ] || fail "-m: expected both ranks with exactly their own arguments"

echo "== rank 3 raises, rank 2 dies of the closed connection: rank 3 is the cause, every time"
for run in 1 2 3; do
  out=$(timeout 120 "$DSLAUNCH" --hostfile "$H" --num_nodes 2 --num_gpus 2 -- "$PY" -u collateral.py 2>&1)
  rc=$?
  summary=$(sed -n '/job failed/,$p' <<<"$out")
  echo "$summary"
  [ $rc -eq 1 ] || fail "run $run: expected exit 1 from rank 3, got $rc"
  [[ "$(sed -n 2p <<<"$summary")" =~ ^\ \ host\ 127\.0\.0\.2,\ rank\ 3,\ pid\ [0-9]+:\ exited\ with\ code\ 1$ ]] ||
    fail "run $run: the summary does not name rank 3 first"
  grep -q "ValueError: rank 3 raises: the root cause" <<<"$summary" || fail "run $run: rank 3's exception is not shown"
  # Rank 2 either exits on its own or is still tearing down when the stop's
  # SIGTERM reaches it; its traceback makes it a failed rank either way.
  grep -Eq "rank 2, pid [0-9]+: (exited with code 1|killed by signal 15 \(SIGTERM\)) at .* \(a lost connection\)" <<<"$summary" ||
    fail "run $run: rank 2 is not listed as a failed rank with its lost connection"
done

[ $fails -eq 0 ] && echo "torch_test: all checks passed"
exit $((fails > 0))
