// The plain option structs that the config parsers (ds_config, trainer_config)
// fill and the model code (optimizers, schedulers, loss scaler, Mlp, data)
// consumes. Kept here so that parsing a configuration needs no BLAS: dslaunch
// links the parsers to check a job's trainer: section. Plain data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ds::rt {

enum class OptimizerType { kSgd, kAdam, kAdamW };

// DeepSpeed's `optimizer: {type, params}` keys (names as in ds_config.json).
struct OptimizerConfig {
  OptimizerType type = OptimizerType::kAdamW;
  double lr = 1e-3;
  double beta1 = 0.9;            // params.betas[0]
  double beta2 = 0.999;          // params.betas[1]
  double eps = 1e-8;
  double weight_decay = 0.0;     // FusedAdam's and torch SGD's default
  bool adam_w_mode = true;       // DeepSpeed ADAM_W_MODE_DEFAULT; AdamW forces true
  bool bias_correction = true;   // FusedAdam's bias_correction
  double momentum = 0.0;         // SGD
  double dampening = 0.0;        // SGD
  bool nesterov = false;         // SGD
};

enum class SchedulerType { kNone, kWarmupLR, kWarmupDecayLR, kWarmupCosineLR };

struct SchedulerConfig {
  SchedulerType type = SchedulerType::kNone;  // kNone: constant optimizer lr
  double warmup_min_lr = 0.0;        // WarmupLR, WarmupDecayLR
  double warmup_max_lr = 0.001;      // WarmupLR, WarmupDecayLR
  int64_t warmup_num_steps = 1000;   // all; DeepSpeed uses max(2, this)
  std::string warmup_type = "log";   // "log" or "linear"
  int64_t total_num_steps = 0;       // WarmupDecayLR, WarmupCosineLR (required)
  double warmup_min_ratio = 0.0;     // WarmupCosineLR
  double cos_min_ratio = 0.0001;     // WarmupCosineLR
};

struct LossScalerConfig {
  bool dynamic = true;             // fp16.loss_scale == 0
  double static_scale = 1.0;       // fp16.loss_scale when > 0
  int initial_scale_power = 16;    // fp16.initial_scale_power
  int64_t window = 1000;           // fp16.loss_scale_window
  int hysteresis = 2;              // fp16.hysteresis
  double min_scale = 1.0;          // fp16.min_loss_scale
};

enum class Activation { kRelu, kGelu };

struct MlpConfig {
  std::vector<int> sizes = {784, 512, 512, 10};  // input, hidden..., classes
  Activation activation = Activation::kRelu;
};

// Pixel normalization applied when loading IDX images.
// kMeanStd: (x/255 - 0.2860) / 0.3530 (Fashion-MNIST's training mean/std,
// the usual torchvision Normalize). kUnit: x/255.
enum class PixelNorm { kMeanStd, kUnit };

struct SyntheticOptions {
  int64_t samples = 60000;
  int features = 784;
  int classes = 10;
  uint64_t seed = 1;
};

}  // namespace ds::rt
