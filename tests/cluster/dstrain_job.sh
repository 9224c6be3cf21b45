# The cluster tests' dstrain job (sourced; bash): a small synthetic task,
# each host's checkpoints and snapshots in its own $work/ckpt-{host}, a
# heartbeat every 250 ms with a 1 s timeout, ssh with strict host keys.
#   dstrain_job [KEY=VALUE ...] > job.yaml
# Keys (default):
#   steps (20000)        trainer.max_steps
#   every (50)           a snapshot every N steps
#   keep (100)           saves kept, on disk and in memory
#   replicas ()          checkpoint.replicas; none: the default
#   restarts (1)         elastic.max_restarts
#   min_nodes (2)        elastic.min_nodes
#   in_place ()          elastic.in_place (true, false; a 5 s deadline); none: off
#   stage (2)            ZeRO stage
#   hidden (32)          the hidden layer's width
#   print (50)           steps_per_print
#   coordinator ()       the coordinator: section, a flow mapping; none: no failover
#   connect_timeout ()   ssh.connect_timeout; none: the default
# An unknown key is an error (the test fails there, not in dslaunch).
dstrain_job() {
  local steps=20000 every=50 keep=100 replicas="" restarts=1 min_nodes=2 in_place="" stage=2 hidden=32 print=50
  local coordinator="" connect_timeout="" kv
  for kv in "$@"; do
    case ${kv%%=*} in
      steps | every | keep | replicas | restarts | min_nodes | in_place | stage | hidden | print | coordinator | connect_timeout)
        local "$kv" ;;
      *) echo "dstrain_job: unknown key '${kv%%=*}'" >&2; return 2 ;;
    esac
  done
  cat <<YAML
${coordinator:+coordinator: $coordinator}
checkpoint: {dir: "$work/ckpt-{host}", keep: $keep${replicas:+, replicas: $replicas}}
elastic: {max_restarts: $restarts, min_nodes: $min_nodes, heartbeat_interval: 250ms, heartbeat_timeout: 1s${in_place:+, in_place: $in_place, in_place_deadline: 5s}}
ssh: {strict_host_key_checking: yes${connect_timeout:+, connect_timeout: $connect_timeout}}
env: {OMP_NUM_THREADS: '1', OPENBLAS_NUM_THREADS: '1'}
trainer:
  model: {layers: [64, $hidden, 8], activation: relu}
  data: {dataset: synthetic, samples: 6144, features: 64, classes: 8}
  epochs: 100000
  max_steps: $steps
  seed: 5
  eval: {every_epoch: false}
  checkpoint: {every_steps: $every, keep: $keep}
  config:
    train_micro_batch_size_per_gpu: 32
    optimizer: {type: Adam, params: {lr: 0.0002}}
    zero_optimization: {stage: $stage}
    steps_per_print: $print
YAML
}
