#!/bin/bash
# The Debian package, as a user installs it: scripts/make-deb builds it from
# this build, then in a fresh Debian container (the registry-free base image)
#   apt-get install ./dslaunch_*.deb     (its computed Depends from Debian's archive)
# and from the installed paths only (/usr/bin, no --agent-path): --version of
# all three programs, the man pages, the bash completion, a 2-node local
# dstrain job and `dslaunch check`; then `apt-get purge` must leave no file of
# ours behind. Run inside tests/docker/with-docker.
#   deb_test.sh BUILD_DIR
set -uo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
source "$src/tests/test_util/elastic_job.sh"
work=$(mktemp -d /tmp/dsl-deb.XXXXXX)
name="dsl-deb-test-$$"
trap 'docker rm -f "$name" >/dev/null 2>&1; rm -rf "$work"' EXIT

"$src/scripts/make-deb" --out "$work" "$build" >"$work/make-deb.log" 2>&1 || {
  cat "$work/make-deb.log"; echo "FAIL: make-deb"; exit 1; }
ls "$work"/dslaunch_*.deb >/dev/null 2>&1 || { echo "FAIL: no dslaunch_*.deb in $work"; exit 1; }
elastic_job_yaml /tmp/job/ckpt 500 1 >"$work/job.yaml"
printf '127.0.0.1 slots=1\n127.0.0.2 slots=1\n' >"$work/hostfile"

cat >"$work/in-container.sh" <<'SH'
set -u
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ours() {  # every file outside the package manager's own state, caches and logs
  find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /debs -o -path /tmp -o -path /var/lib/apt \
    -o -path /var/lib/dpkg -o -path /var/cache -o -path /var/log -o -path /run \) -prune -o -print | sort
}
apt-get update -qq >/dev/null || { echo "FAIL: apt-get update"; exit 1; }
ours >/tmp/before
cd /debs
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ./dslaunch_*.deb >/tmp/install.log 2>&1 ||
  { cat /tmp/install.log; echo "FAIL: apt-get install ./dslaunch_*.deb"; exit 1; }
for p in dslaunch dsagent dstrain; do
  [ "$(command -v $p)" = /usr/bin/$p ] || fail "$p is not /usr/bin/$p"
  $p --version | grep -q "^$p " || fail "$p --version: $($p --version 2>&1)"
done
for m in man1/dslaunch.1 man1/dstrain.1 man8/dsagent.8; do
  [ -s /usr/share/man/$m.gz ] || fail "no /usr/share/man/$m.gz"
done
[ -s /usr/share/bash-completion/completions/dslaunch ] || fail "no bash completion"
[ -s /usr/share/dslaunch/docker/Dockerfile ] || fail "no docker files for dslaunch cluster"
mkdir -p /tmp/job && cd /tmp/job
dslaunch --hostfile /debs/hostfile --launcher local /debs/job.yaml >/tmp/job/out 2>&1 || fail "the 2-node job exited $?"
grep -q "all 2 workers exited 0" /tmp/job/out || { cat /tmp/job/out; fail "no success line from the 2-node job"; }
grep -q "dstrain: 2 ranks on cpu" /tmp/job/out || fail "dstrain did not run 2 ranks"
dslaunch check --hostfile /debs/hostfile --launcher local >/tmp/job/check 2>&1 || { cat /tmp/job/check; fail "dslaunch check exited $?"; }
grep -q "2 of 2 hosts ready" /tmp/job/check || { cat /tmp/job/check; fail "dslaunch check: not 2 of 2 hosts ready"; }
DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq dslaunch >/dev/null 2>&1 || fail "apt-get purge dslaunch"
ours >/tmp/after
# What is left of ours: any path the purge did not remove, apart from the
# dependencies apt installed (their files are not ours).
left=$(comm -13 /tmp/before /tmp/after | grep -E 'dslaunch|dsagent|dstrain' )
[ -z "$left" ] || fail "left behind after purge: $left"
[ $fails -eq 0 ] && echo "deb: all checks passed"
exit $((fails > 0))
SH
docker run --name "$name" --rm -v "$work":/debs:ro dslaunch-base:bookworm bash /debs/in-container.sh
