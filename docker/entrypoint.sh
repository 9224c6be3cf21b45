#!/bin/sh
# Entry point of a `dslaunch cluster` container. DSLAUNCH_ROLE=node runs sshd
# in the foreground; controller only waits (dslaunch runs in it through
# `docker exec`, from `dslaunch cluster run` and `status`); so does anchor.
set -eu
keys=/etc/dslaunch/keys
role=${DSLAUNCH_ROLE:-node}

# Variables set by Docker's ENV or compose's environment: (CUDA's PATH and
# LD_LIBRARY_PATH among them) are invisible to SSH sessions; pam_env reads
# /etc/environment, so write them there.
env | grep -Ev '^(HOSTNAME|HOME|PWD|OLDPWD|SHLVL|TERM|_)=' | grep -v "[\"'\\\\]" >/etc/environment || true

# SSH sessions get pam_limits' soft nofile of 1024 unless told otherwise: give
# them the container's own hard limits (docker-compose.gpu.yml raises those).
nofile=$(ulimit -Hn) memlock=$(ulimit -Hl)
for who in '*' root; do  # '*' does not cover root
  printf '%s soft nofile %s\n%s hard nofile %s\n%s soft memlock %s\n%s hard memlock %s\n' \
    "$who" "$nofile" "$who" "$nofile" "$who" "$memlock" "$who" "$memlock"
done >/etc/security/limits.d/dslaunch.conf

case $role in
  node)
    for f in ssh_host_ed25519_key authorized_keys; do
      [ -r "$keys/$f" ] || { echo "dslaunch-entrypoint: $keys/$f is missing: mount the cluster's key directory there (dslaunch cluster up does)" >&2; exit 1; }
    done
    exec /usr/sbin/sshd -D -e;;
  anchor)  # `dslaunch cluster up --join`: keeps the overlay visible to compose on a swarm worker
    exec sleep infinity;;
  controller)
    [ -r "$keys/ssh_config" ] || { echo "dslaunch-entrypoint: $keys/ssh_config is missing: mount the cluster's controller key directory there (dslaunch cluster up does)" >&2; exit 1; }
    exec sleep infinity;;
  *)
    echo "dslaunch-entrypoint: DSLAUNCH_ROLE must be node or controller, got '$role'" >&2; exit 2;;
esac
