#!/bin/bash
# DeepSpeed users' habits over real SSH on the netns cluster (3 nodes x 2
# slots; the nodes share this machine's filesystem but each SSH session
# starts in $HOME with sshd's bare environment). Run inside
# tests/cluster/with-cluster.   compat_test.sh DSLAUNCH
# Checks: remote workers start in the directory dslaunch was started from,
# with it first on PYTHONPATH, so `dslaunch --hostfile h train.py` finds
# train.py; the launcher's NCCL_*/PYTHON* variables and the working
# directory's .deepspeed_env reach every remote worker byte for byte, other
# variables do not; forward_env: [] turns forwarding off; `dslaunch check`
# checks the working directory.
set -uo pipefail
DSLAUNCH=$1
C=${DSLAUNCH_TEST_CLUSTER:?run me inside tests/cluster/with-cluster}
work=$(mktemp -d /tmp/dsl-compat.XXXXXX)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/../test_util/preamble.sh"
H=$C/hostfile.ip
cd "$work"

echo "== a relative script runs in the launcher's directory on every node"
cat >train.py <<'PY'
import os, sys
import helper_mod  # found through PYTHONPATH / the script's directory
print("R=%s CWD=%s PP0=%s ARGS=%s" % (os.environ["RANK"], os.getcwd(),
      os.environ.get("PYTHONPATH", "").split(":")[0], " ".join(sys.argv[1:])))
PY
echo 'X = 1' >helper_mod.py
out=$(timeout 60 env -u PYTHONPATH "$DSLAUNCH" --hostfile "$H" --launcher ssh train.py --lr 0.1 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "train.py job exited $rc"
[ "$(grep -c "CWD=$work PP0=$work ARGS=--lr 0.1" <<<"$out")" -eq 6 ] ||
  fail "expected 6 workers in $work with it first on PYTHONPATH"

echo "== forwarded prefixes and .deepspeed_env reach remote workers byte for byte"
odd=$'a  b\t"q" \'s\' $HOME `x` \\ end'
printf 'DS_FILE_VAR=from deepspeed_env\nNCCL_ALGO = Ring \n' >.deepspeed_env
show='printf "R=%s|%s|%s|%s|%s|%s|%s\n" "$RANK" "$NCCL_DEBUG" "$PYTHONHASHSEED" "${NOT_FORWARDED-unset}" "$DS_FILE_VAR" "$NCCL_ALGO" "$UCX_ODD" | od -An -c | tr -s " " | tr -d "\n"; echo'
out=$(timeout 60 env NCCL_DEBUG=INFO PYTHONHASHSEED=7 NOT_FORWARDED=1 UCX_ODD="$odd" \
  "$DSLAUNCH" --hostfile "$H" --launcher ssh -- sh -c "$show" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "env job exited $rc"
for r in 0 1 2 3 4 5; do
  want=$(printf "R=%s|%s|%s|%s|%s|%s|%s\n" "$r" INFO 7 unset "from deepspeed_env" Ring "$odd" | od -An -c | tr -s " " | tr -d "\n")
  grep -qF -- "$want" <<<"$out" || fail "rank $r: wrong forwarded environment"
done

echo "== forward_env: [] forwards nothing (the env files still apply)"
printf 'command: [sh, -c, "echo R=$RANK D=${NCCL_DEBUG-unset} F=$DS_FILE_VAR"]\nforward_env: []\n' >noforward.yaml
out=$(timeout 60 env NCCL_DEBUG=INFO "$DSLAUNCH" --hostfile "$H" --launcher ssh noforward.yaml 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "forward_env: [] job exited $rc"
[ "$(grep -c 'D=unset F=from deepspeed_env' <<<"$out")" -eq 6 ] || fail "forward_env: [] still forwarded NCCL_DEBUG"

echo "== working_dir: in the job file wins; check and run name a missing one"
mkdir sub
printf 'command: [sh, -c, "echo R=$RANK CWD=$(pwd)"]\nworking_dir: sub\n' >sub.yaml
out=$(timeout 60 "$DSLAUNCH" --hostfile "$H" --launcher ssh sub.yaml 2>&1)
echo "$out"
[ "$(grep -c "CWD=$work/sub" <<<"$out")" -eq 6 ] || fail "working_dir: sub was not $work/sub on every node"
printf 'command: [pwd]\nworking_dir: /nonexistent/dslaunch-wd\n' >missing.yaml
out=$(timeout 60 "$DSLAUNCH" check --hostfile "$H" missing.yaml 2>&1)
rc=$?
echo "$out"
[ $rc -ne 0 ] || fail "check passed with a missing working directory"
grep -q "/nonexistent/dslaunch-wd does not exist" <<<"$out" || fail "check does not name the missing working directory"
out=$(timeout 60 "$DSLAUNCH" --hostfile "$H" --launcher ssh missing.yaml 2>&1)
rc=$?
echo "$out"
[ $rc -eq 127 ] || fail "a run in a missing working directory exited $rc, expected 127"
grep -q "cannot start in the working directory /nonexistent/dslaunch-wd: No such file or directory" <<<"$out" ||
  fail "the run does not name the missing working directory"
out=$(timeout 60 "$DSLAUNCH" check --hostfile "$H" 2>&1)
rc=$?
[ $rc -eq 0 ] || { echo "$out"; fail "check failed in an existing working directory"; }

[ $fails -eq 0 ] && echo "compat_test: all checks passed"
exit $((fails > 0))
