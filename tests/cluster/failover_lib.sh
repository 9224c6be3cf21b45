# What both coordinator-failover tests (failover_test.sh: a site's etcd;
# failover_replicas_test.sh: the job's own) share: their job and how a
# host's snapshots are read. Sourced after netns_lib.sh's read_cluster, in
# the test's work directory $work.

# failover_job COORDINATOR_FLOW_MAPPING [MAX_STEPS] > job.yaml: dstrain on
# the first 3 hosts, a snapshot every 50 steps on each host's own disk,
# MAX_STEPS steps (20000).
failover_job() {
  cat <<YAML
checkpoint: {dir: "$work/ckpt-{host}", keep: 100}
elastic: {max_restarts: 1, min_nodes: 2, heartbeat_interval: 250ms, heartbeat_timeout: 1s}
coordinator: $1
ssh: {strict_host_key_checking: yes, connect_timeout: 2s}
env: {OMP_NUM_THREADS: '1', OPENBLAS_NUM_THREADS: '1'}
trainer:
  model: {layers: [64, 32, 8], activation: relu}
  data: {dataset: synthetic, samples: 6144, features: 64, classes: 8}
  epochs: 1000
  max_steps: ${2:-20000}
  seed: 5
  eval: {every_epoch: false}
  checkpoint: {every_steps: 50, keep: 100}
  config:
    train_micro_batch_size_per_gpu: 32
    optimizer: {type: Adam, params: {lr: 0.0002}}
    zero_optimization: {stage: 2}
    steps_per_print: 50
YAML
}

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
