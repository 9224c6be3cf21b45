# Sourced by the cluster and docker tests (bash).
#   elastic_job_yaml CHECKPOINT_DIR EVERY_STEPS MIN_NODES [EXTRA_LINE]
# prints the job file of a dstrain run of 6000 steps (a few seconds on this
# machine) that checkpoints every EVERY_STEPS steps and may lose one node:
# max_restarts 1, heartbeat_timeout 2s. EXTRA_LINE is one more top-level key.
elastic_job_yaml() {
  cat <<YAML
checkpoint_dir: $1
elastic: {max_restarts: 1, min_nodes: $3, heartbeat_interval: 500ms, heartbeat_timeout: 2s}
${4:-}
env: {OMP_NUM_THREADS: '1', OPENBLAS_NUM_THREADS: '1'}
trainer:
  model: {layers: [64, 256, 4], activation: relu}
  data: {dataset: synthetic, samples: 6144, features: 64, classes: 4}
  epochs: 1000
  max_steps: 6000
  seed: 5
  eval: {every_epoch: false}
  checkpoint: {every_steps: $2, keep: 2}
  config:
    train_micro_batch_size_per_gpu: 32
    optimizer: {type: Adam, params: {lr: 0.001}}
    zero_optimization: {stage: 2}
    steps_per_print: 1000
YAML
}
