# What the coordinator-failover tests (failover_test.sh: a site's etcd;
# failover_replicas_test.sh and failover_partition_test.sh: the job's own)
# share: their job (dstrain_job.sh) and how a host's snapshots are read.
# Sourced after netns_lib.sh's read_cluster, in the test's work directory
# $work.
. "$(dirname "${BASH_SOURCE[0]}")/dstrain_job.sh"

snapshot_on() {  # HOST STEP: host's own shard of a step >= STEP on its disk
  local f s
  for f in "$work/ckpt-${ADDR[$1]}"/step_*/shard_"$1".held; do
    [ -e "$f" ] || continue
    s=${f#*step_}; s=$((10#${s%%.*}))
    [ "$s" -ge "$2" ] && return 0
  done
  return 1
}

# Fails for every save of a step below $1 written after the file `killed`: trained from scratch.
none_rewritten_below() {
  local f s
  for f in "$work"/ckpt-*/step_*/shard_*.held; do
    s=${f##*/step_}; s=$((10#${s%%.*}))
    [ "$s" -lt "$1" ] && [ "$f" -nt killed ] && fail "$f was written again after the loss: trained from scratch?"
  done
}
