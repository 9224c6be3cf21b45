// TrainerConfig: the `trainer:` section of train.yaml, which dstrain receives
// as YAML text in DSLAUNCH_TRAINER_CONFIG (or reads from a file), and which
// dslaunch checks with the same parser when it loads the job file. Unknown
// keys are errors with "did you mean" (yaml_keys.h); `config` is a
// ds_config.json path (relative to base_dir) or the DeepSpeed keys inline.
// Parsing is pure apart from reading that ds_config.json.
//
//   trainer:
//     model: {layers: [784, 512, 512, 10], activation: relu}   # relu | gelu
//     data: {dataset: fashion-mnist, path: /usr/share/datasets/fashion-mnist,
//            drop_last: true, shuffle: true, normalize: mean_std}  # | unit
//           # or {dataset: synthetic, samples: 60000, features: 784, classes: 10}
//     epochs: 3            # or max_steps: N (both: whichever ends first)
//     seed: 42
//     backend: gloo        # | nccl (only in a dstrain built with CUDA)
//     device: cuda         # | cpu; default cuda where a CUDA build sees a GPU
//     tf32: false          # device fp32 matrix products on TF32 tensor cores
//     config: ds_config.json
//     checkpoint: {dir: ckpt, every_steps: 200, keep: 2}
//     metrics: {dir: runs/x}
//     eval: {every_epoch: true}
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "runtime/config/training_options.h"
#include "runtime/config/ds_config.h"

namespace YAML {
class Node;
}

namespace ds::rt {

// Sizes checked at parse time, so that an allocation that cannot succeed is a
// config error naming the line, not a bad_alloc in every worker.
inline constexpr int64_t kMaxModelParameters = int64_t{1} << 28;  // 268435456: 1 GiB of float32
                                                                  // weights, 4 GiB with Adam's state
inline constexpr int64_t kMaxSyntheticValues = int64_t{1} << 28;  // samples x features (1 GiB)

struct DataSection {
  std::string dataset = "fashion-mnist";                 // fashion-mnist | synthetic
  std::string path = "/usr/share/datasets/fashion-mnist";
  bool drop_last = true;
  bool shuffle = true;
  PixelNorm normalize = PixelNorm::kMeanStd;
  SyntheticOptions synthetic;                            // dataset: synthetic
};

struct CheckpointSection {
  std::string dir;            // empty: DSLAUNCH_CHECKPOINT_DIR, else no checkpoints
  int64_t every_steps = 0;    // 0: only at the end
  int keep = 2;               // newest complete checkpoints kept
};

struct MetricsSection {
  std::string dir;            // empty: no metrics files
};

struct EvalSection {
  bool every_epoch = true;
};

struct TrainerConfig {
  MlpConfig model;
  DataSection data;
  int64_t epochs = 1;         // max_steps given alone: set to max_steps (never binds)
  int64_t max_steps = 0;      // 0: no limit; optimizer steps; both set: first reached ends
  uint64_t seed = 42;
  std::string backend = "gloo";  // collectives: gloo, or nccl (a CUDA build of dstrain only)
  std::string device;         // cpu | cuda; "": cuda when a CUDA build sees a GPU, else cpu
  bool tf32 = false;          // device fp32 products on TF32 tensor cores (PyTorch's allow_tf32)
  std::string config_path;    // ds_config path as resolved ("" when inline)
  DsConfig ds;                // parsed and resolved for the world size
  CheckpointSection checkpoint;
  MetricsSection metrics;
  EvalSection eval;
};

struct TrainerConfigOptions {
  int world_size = 1;                 // resolves the DeepSpeed batch keys; 0 = not known
                                      // yet: they are checked one by one (ParseDsConfig)
  std::string base_dir = ".";         // relative paths (config) resolve here
  std::string origin = "trainer";     // names the source in errors
  bool read_config_file = true;       // false: a `config:` path is recorded, not read
                                      // (dslaunch: the file is where the workers run)
};

// Parses YAML text holding either a top-level `trainer:` map or the map
// itself. Errors name the place and the key path, e.g.
// "train.yaml:2:21: unknown key 'activaton' in trainer.model (did you mean 'activation'?)".
Result<TrainerConfig> ParseTrainerConfig(const std::string& yaml_text,
                                         const TrainerConfigOptions& options);

// The same for the trainer: map already parsed, e.g. inside a job file (its
// positions are then the job file's lines and columns).
Result<TrainerConfig> ParseTrainerSection(const YAML::Node& section,
                                          const TrainerConfigOptions& options);

// Reads `path` and parses it (base_dir defaults to the file's directory).
Result<TrainerConfig> LoadTrainerConfig(const std::string& path, TrainerConfigOptions options);

}  // namespace ds::rt
