// DsConfig: DeepSpeed's ds_config.json, keys as DeepSpeed spells them, read
// with yaml-cpp (JSON is YAML) from a file or from an inline node (the
// `trainer.config` map of train.yaml). Unknown keys are errors naming the key
// path with a "did you mean"; contradictions (fp16 and bf16 both enabled,
// inconsistent batch sizes) are errors naming the keys and numbers.
// Parsing is pure; results are plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"
#include "runtime/config/training_options.h"
#include "runtime/config/yaml_keys.h"

namespace ds::rt {

// The three batch keys as written; nullopt = missing or "auto".
struct BatchKeys {
  std::optional<int64_t> train_batch_size;
  std::optional<int64_t> train_micro_batch_size_per_gpu;
  std::optional<int64_t> gradient_accumulation_steps;
};

struct BatchSizes {
  int64_t train_batch_size = 0;  // = micro * gas * world
  int64_t micro_batch = 0;       // train_micro_batch_size_per_gpu
  int64_t gas = 1;               // gradient_accumulation_steps
};

// DeepSpeed's rule: train_batch_size = micro * gas * world_size; missing or
// "auto" values are derived from the others (gas defaults to 1 when it
// cannot be derived). Errors name the keys and the numbers.
Result<BatchSizes> ResolveBatch(const BatchKeys& keys, int world_size);

struct Fp16Config {
  bool enabled = false;
  double loss_scale = 0;         // 0 = dynamic
  int initial_scale_power = 16;
  int64_t loss_scale_window = 1000;
  int hysteresis = 2;
  double min_loss_scale = 1;
};

enum class OffloadDevice { kNone, kCpu };

struct ZeroConfig {
  int stage = 0;                                  // 0..3
  int64_t reduce_bucket_size = 500'000'000;       // elements
  int64_t allgather_bucket_size = 500'000'000;    // elements
  bool overlap_comm = false;
  bool contiguous_gradients = true;
  bool reduce_scatter = true;
  OffloadDevice offload_optimizer = OffloadDevice::kNone;  // cpu == where we are anyway
  // stage3_* keys are accepted; these two are used for the layer gather.
  int64_t stage3_prefetch_bucket_size = 50'000'000;
  int64_t stage3_param_persistence_threshold = 100'000;
};

struct DsConfig {
  BatchKeys batch_keys;           // as written
  BatchSizes batch;               // resolved for the world size given to Parse (zeros
                                  // when it was 0: not known yet)
  bool has_optimizer = false;     // optimizer section present
  OptimizerConfig optimizer;
  SchedulerConfig scheduler;
  double gradient_clipping = 0;   // 0 = off; global L2 norm across all partitions
  Fp16Config fp16;
  bool bf16 = false;              // bf16.enabled
  ZeroConfig zero;
  int64_t steps_per_print = 10;
  bool wall_clock_breakdown = false;

  LossScalerConfig loss_scaler() const;  // from fp16
};

// Parses a ds_config node. `source` names it in errors (a file path, or the
// job file's trainer.config); `world_size` resolves the batch keys, or 0
// when it is not known yet (dslaunch before its plan): the keys are then
// read and checked one by one, not against each other.
Result<DsConfig> ParseDsConfig(const YAML::Node& node, int world_size,
                               const cfg::ConfigSource& source);
// The same for a file of its own: `origin` is its path.
Result<DsConfig> ParseDsConfig(const YAML::Node& node, int world_size, const std::string& origin);

// Reads and parses a ds_config.json file; errors name the path.
Result<DsConfig> LoadDsConfig(const std::string& path, int world_size);

}  // namespace ds::rt
