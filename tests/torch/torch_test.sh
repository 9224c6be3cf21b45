#!/bin/bash
# A real PyTorch script (Debian's python3-torch, installed here when missing)
# under dslaunch on 2 local nodes:
#   1. torch.distributed.is_torchelastic_launched() is true, ROLE_NAME is
#      "default", torchrun's variables are there, and a Gloo group forms
#      through env:// (MASTER_ADDR/MASTER_PORT) and all-reduces;
#   2. DeepSpeed's form (PYTHON_EXEC, --deepspeed) passes --local_rank=N (right after the script),
#      torchrun's -m form does not;
#   3. a rank that raises inside @record (with its stderr closed) makes
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
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
cd "$work"
cp "$here/record_error.py" "$here/collateral.py" .
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
