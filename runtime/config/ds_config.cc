#include "runtime/config/ds_config.h"


#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "common/files.h"
#include "common/strings.h"
#include "runtime/config/config_yaml.h"

namespace ds::rt {
namespace {

using cfg::CheckSection;
using cfg::ConfigSource;
using cfg::ReadBool;
using cfg::ReadDouble;
using cfg::ReadInt;
using cfg::ReadString;
using cfg::Where;

const std::vector<std::string> kTopKeys = {
    "train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
    "optimizer", "scheduler", "gradient_clipping", "fp16", "bf16", "zero_optimization",
    // Accepted and ignored: logging, monitoring and GPU-only knobs DeepSpeed users keep.
    "steps_per_print", "wall_clock_breakdown", "memory_breakdown", "dump_state",
    "prescale_gradients", "gradient_predivide_factor", "zero_allow_untested_optimizer",
    "zero_force_ds_cpu_optimizer", "communication_data_type", "sparse_gradients",
    "flops_profiler", "tensorboard", "wandb", "csv_monitor", "comms_logger",
    "activation_checkpointing", "aio", "amp", "data_types",
    "bfloat16"};  // DeepSpeed's older name of bf16

const std::vector<std::string> kAdamKeys = {"lr", "betas", "eps", "weight_decay", "adam_w_mode",
                                            "bias_correction", "torch_adam", "amsgrad", "fused"};
const std::vector<std::string> kSgdKeys = {"lr", "momentum", "dampening", "weight_decay",
                                           "nesterov"};
const std::vector<std::string> kOptimizerTypes = {"Adam", "AdamW", "SGD"};
const std::vector<std::string> kSchedulerTypes = {"WarmupLR", "WarmupDecayLR", "WarmupCosineLR"};
const std::vector<std::string> kFp16Keys = {
    "enabled", "loss_scale", "initial_scale_power", "loss_scale_window", "hysteresis",
    "min_loss_scale", "consecutive_hysteresis", "auto_cast", "fp16_master_weights_and_grads"};
const std::vector<std::string> kZeroKeys = {
    "stage", "reduce_bucket_size", "allgather_bucket_size", "overlap_comm",
    "contiguous_gradients", "reduce_scatter", "allgather_partitions", "offload_optimizer",
    "offload_param", "round_robin_gradients", "sub_group_size", "elastic_checkpoint",
    "ignore_unused_parameters", "load_from_fp32_weights", "use_multi_rank_bucket_allreduce",
    "stage3_max_live_parameters", "stage3_max_reuse_distance", "stage3_prefetch_bucket_size",
    "stage3_param_persistence_threshold", "stage3_gather_16bit_weights_on_model_save",
    "stage3_gather_fp16_weights_on_model_save", "stage3_module_granularity_threshold"};
const std::vector<std::string> kOffloadKeys = {"device", "pin_memory", "buffer_count",
                                               "fast_init", "ratio", "nvme_path", "buffer_size",
                                               "max_in_cpu"};

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A batch key: a positive integer, "auto" or absent.
Status ReadBatchKey(const YAML::Node& root, const std::string& key, const std::string& origin,
                    std::optional<int64_t>* out) {
  const YAML::Node v = root[key];
  if (!v.IsDefined() || v.IsNull()) return Status::OK();
  if (v.IsScalar() && v.Scalar() == "auto") return Status::OK();
  int64_t n = 0;
  Status st = ReadInt(root, key, "", origin, &n);
  if (!st.ok() || n <= 0)
    return Status::InvalidArgument(fmt::format("{}'{}' expects a positive integer or \"auto\", got '{}'",
                                               Where(origin, v), key, v.IsScalar() ? v.Scalar() : "?"));
  *out = n;
  return Status::OK();
}

Status ParseOptimizer(const YAML::Node& node, const ConfigSource& src, DsConfig* c) {
  const std::string& origin = src.origin;
  DS_RETURN_IF_ERROR(CheckSection(node, "optimizer", src, {"type", "params"}));
  std::string type;
  DS_RETURN_IF_ERROR(ReadString(node, "type", "optimizer", origin, &type));
  OptimizerConfig& o = c->optimizer;
  const std::string t = Lower(type);
  if (t == "adam") {
    o.type = OptimizerType::kAdam;
  } else if (t == "adamw") {
    o.type = OptimizerType::kAdamW;
  } else if (t == "sgd") {
    o.type = OptimizerType::kSgd;
  } else {
    std::string msg = fmt::format("{}unsupported optimizer.type '{}': expected Adam, AdamW or SGD",
                                  Where(origin, node["type"].IsDefined() ? node["type"] : node), type);
    msg += DidYouMeanHint(type, kOptimizerTypes);
    return Status::InvalidArgument(msg);
  }
  c->has_optimizer = true;
  const YAML::Node p = node["params"];
  const bool sgd = o.type == OptimizerType::kSgd;
  DS_RETURN_IF_ERROR(CheckSection(p, "optimizer.params", src, sgd ? kSgdKeys : kAdamKeys));
  if (!p.IsDefined() || p.IsNull()) return Status::OK();
  const std::string path = "optimizer.params";
  DS_RETURN_IF_ERROR(ReadDouble(p, "lr", path, origin, &o.lr));
  DS_RETURN_IF_ERROR(ReadDouble(p, "weight_decay", path, origin, &o.weight_decay));
  if (sgd) {
    DS_RETURN_IF_ERROR(ReadDouble(p, "momentum", path, origin, &o.momentum));
    DS_RETURN_IF_ERROR(ReadDouble(p, "dampening", path, origin, &o.dampening));
    DS_RETURN_IF_ERROR(ReadBool(p, "nesterov", path, origin, &o.nesterov));
    if (o.nesterov && (o.momentum <= 0 || o.dampening != 0))
      return Status::InvalidArgument(Where(origin, p["nesterov"]) +
                                     "optimizer.params.nesterov needs momentum > 0 and dampening 0");
    return Status::OK();
  }
  DS_RETURN_IF_ERROR(ReadDouble(p, "eps", path, origin, &o.eps));
  DS_RETURN_IF_ERROR(ReadBool(p, "adam_w_mode", path, origin, &o.adam_w_mode));
  DS_RETURN_IF_ERROR(ReadBool(p, "bias_correction", path, origin, &o.bias_correction));
  bool flag = false;
  DS_RETURN_IF_ERROR(ReadBool(p, "torch_adam", path, origin, &flag));
  DS_RETURN_IF_ERROR(ReadBool(p, "fused", path, origin, &flag));
  flag = false;
  DS_RETURN_IF_ERROR(ReadBool(p, "amsgrad", path, origin, &flag));
  if (flag)
    return Status::InvalidArgument(Where(origin, p["amsgrad"]) +
                                   "optimizer.params.amsgrad: true is not supported");
  const YAML::Node betas = p["betas"];
  if (betas.IsDefined() && !betas.IsNull()) {
    if (!betas.IsSequence() || betas.size() != 2)
      return Status::InvalidArgument(Where(origin, betas) +
                                     "'optimizer.params.betas' expects a list of two numbers");
    YAML::Node pair;
    pair["b1"] = betas[0];
    pair["b2"] = betas[1];
    DS_RETURN_IF_ERROR(ReadDouble(pair, "b1", "optimizer.params.betas", origin, &o.beta1));
    DS_RETURN_IF_ERROR(ReadDouble(pair, "b2", "optimizer.params.betas", origin, &o.beta2));
  }
  if (o.type == OptimizerType::kAdamW) o.adam_w_mode = true;
  return Status::OK();
}

Status ParseScheduler(const YAML::Node& node, const ConfigSource& src, DsConfig* c) {
  const std::string& origin = src.origin;
  DS_RETURN_IF_ERROR(CheckSection(node, "scheduler", src, {"type", "params"}));
  std::string type;
  DS_RETURN_IF_ERROR(ReadString(node, "type", "scheduler", origin, &type));
  SchedulerConfig& s = c->scheduler;
  std::vector<std::string> keys = {"warmup_num_steps", "warmup_type", "last_batch_iteration"};
  if (type == "WarmupLR") {
    s.type = SchedulerType::kWarmupLR;
    keys.insert(keys.end(), {"warmup_min_lr", "warmup_max_lr"});
  } else if (type == "WarmupDecayLR") {
    s.type = SchedulerType::kWarmupDecayLR;
    keys.insert(keys.end(), {"warmup_min_lr", "warmup_max_lr", "total_num_steps"});
  } else if (type == "WarmupCosineLR") {
    s.type = SchedulerType::kWarmupCosineLR;
    keys.insert(keys.end(), {"total_num_steps", "warmup_min_ratio", "cos_min_ratio"});
  } else {
    std::string msg = fmt::format(
        "{}unsupported scheduler.type '{}': expected WarmupLR, WarmupDecayLR or WarmupCosineLR",
        Where(origin, node["type"].IsDefined() ? node["type"] : node), type);
    msg += DidYouMeanHint(type, kSchedulerTypes);
    return Status::InvalidArgument(msg);
  }
  const YAML::Node p = node["params"];
  const std::string path = "scheduler.params";
  DS_RETURN_IF_ERROR(CheckSection(p, path, src, keys));
  DS_RETURN_IF_ERROR(ReadDouble(p, "warmup_min_lr", path, origin, &s.warmup_min_lr));
  DS_RETURN_IF_ERROR(ReadDouble(p, "warmup_max_lr", path, origin, &s.warmup_max_lr));
  DS_RETURN_IF_ERROR(ReadInt(p, "warmup_num_steps", path, origin, &s.warmup_num_steps));
  DS_RETURN_IF_ERROR(ReadString(p, "warmup_type", path, origin, &s.warmup_type));
  DS_RETURN_IF_ERROR(ReadInt(p, "total_num_steps", path, origin, &s.total_num_steps));
  DS_RETURN_IF_ERROR(ReadDouble(p, "warmup_min_ratio", path, origin, &s.warmup_min_ratio));
  DS_RETURN_IF_ERROR(ReadDouble(p, "cos_min_ratio", path, origin, &s.cos_min_ratio));
  if (s.warmup_type != "log" && s.warmup_type != "linear")
    return Status::InvalidArgument(fmt::format("{}'scheduler.params.warmup_type' expects log or linear, got '{}'",
                                               Where(origin, p["warmup_type"]), s.warmup_type));
  if (s.type != SchedulerType::kWarmupLR && s.total_num_steps <= 0)
    return Status::InvalidArgument(fmt::format("{}scheduler {} needs scheduler.params.total_num_steps > 0",
                                               Where(origin, node), type));
  return Status::OK();
}

Status ParseZero(const YAML::Node& z, const ConfigSource& src, ZeroConfig* zc) {
  const std::string& origin = src.origin;
  const std::string path = "zero_optimization";
  DS_RETURN_IF_ERROR(CheckSection(z, path, src, kZeroKeys, "stage3_"));
  if (!z.IsDefined() || z.IsNull()) return Status::OK();
  DS_RETURN_IF_ERROR(ReadInt(z, "stage", path, origin, &zc->stage));
  if (zc->stage < 0 || zc->stage > 3)
    return Status::InvalidArgument(fmt::format("{}'zero_optimization.stage' expects 0, 1, 2 or 3, got {}",
                                               Where(origin, z["stage"]), zc->stage));
  DS_RETURN_IF_ERROR(ReadInt(z, "reduce_bucket_size", path, origin, &zc->reduce_bucket_size));
  DS_RETURN_IF_ERROR(ReadInt(z, "allgather_bucket_size", path, origin, &zc->allgather_bucket_size));
  for (const char* k : {"reduce_bucket_size", "allgather_bucket_size"}) {
    const int64_t v = std::string(k) == "reduce_bucket_size" ? zc->reduce_bucket_size
                                                             : zc->allgather_bucket_size;
    if (v <= 0)
      return Status::InvalidArgument(fmt::format("{}'zero_optimization.{}' expects a positive integer, got {}",
                                                 Where(origin, z[k]), k, v));
  }
  DS_RETURN_IF_ERROR(ReadBool(z, "overlap_comm", path, origin, &zc->overlap_comm));
  DS_RETURN_IF_ERROR(ReadBool(z, "contiguous_gradients", path, origin, &zc->contiguous_gradients));
  DS_RETURN_IF_ERROR(ReadBool(z, "reduce_scatter", path, origin, &zc->reduce_scatter));
  DS_RETURN_IF_ERROR(ReadInt(z, "stage3_prefetch_bucket_size", path, origin,
                             &zc->stage3_prefetch_bucket_size));
  DS_RETURN_IF_ERROR(ReadInt(z, "stage3_param_persistence_threshold", path, origin,
                             &zc->stage3_param_persistence_threshold));
  for (const char* section : {"offload_optimizer", "offload_param"}) {
    const YAML::Node off = z[section];
    const std::string opath = path + "." + section;
    DS_RETURN_IF_ERROR(CheckSection(off, opath, src, kOffloadKeys));
    std::string device = "none";
    if (off.IsDefined() && off.IsMap())
      DS_RETURN_IF_ERROR(ReadString(off, "device", opath, origin, &device));
    if (device != "none" && device != "cpu")
      return Status::InvalidArgument(fmt::format("{}'{}.device' expects cpu or none, got '{}'",
                                                 Where(origin, off["device"]), opath, device));
    if (std::string(section) == "offload_optimizer")
      zc->offload_optimizer = device == "cpu" ? OffloadDevice::kCpu : OffloadDevice::kNone;
  }
  return Status::OK();
}

}  // namespace

Result<BatchSizes> ResolveBatch(const BatchKeys& k, int world_size) {
  const int64_t w = world_size < 1 ? 1 : world_size;
  const auto& tb = k.train_batch_size;
  const auto& mb = k.train_micro_batch_size_per_gpu;
  const auto& ga = k.gradient_accumulation_steps;
  BatchSizes b;
  if (tb && mb && ga) {
    b = {*tb, *mb, *ga};
  } else if (tb && mb) {
    if (*tb % (*mb * w) != 0)
      return Status::InvalidArgument(fmt::format(
          "train_batch_size ({}) is not divisible by train_micro_batch_size_per_gpu ({}) * world size ({})",
          *tb, *mb, w));
    b = {*tb, *mb, *tb / (*mb * w)};
  } else if (tb && ga) {
    if (*tb % (*ga * w) != 0)
      return Status::InvalidArgument(fmt::format(
          "train_batch_size ({}) is not divisible by gradient_accumulation_steps ({}) * world size ({})",
          *tb, *ga, w));
    b = {*tb, *tb / (*ga * w), *ga};
  } else if (mb) {
    const int64_t g = ga ? *ga : 1;
    b = {*mb * g * w, *mb, g};
  } else if (tb) {
    if (*tb % w != 0)
      return Status::InvalidArgument(fmt::format(
          "train_batch_size ({}) is not divisible by world size ({})", *tb, w));
    b = {*tb, *tb / w, 1};
  } else {
    return Status::InvalidArgument(
        "either train_batch_size or train_micro_batch_size_per_gpu must be given");
  }
  if (b.train_batch_size != b.micro_batch * b.gas * w)
    return Status::InvalidArgument(fmt::format(
        "train_batch_size ({}) != train_micro_batch_size_per_gpu ({}) * gradient_accumulation_steps ({}) * world size ({}) = {}",
        b.train_batch_size, b.micro_batch, b.gas, w, b.micro_batch * b.gas * w));
  return b;
}

LossScalerConfig DsConfig::loss_scaler() const {
  LossScalerConfig l;
  l.dynamic = fp16.loss_scale == 0;
  l.static_scale = fp16.loss_scale > 0 ? fp16.loss_scale : 1.0;
  l.initial_scale_power = fp16.initial_scale_power;
  l.window = fp16.loss_scale_window;
  l.hysteresis = fp16.hysteresis;
  l.min_scale = fp16.min_loss_scale;
  return l;
}

Result<DsConfig> ParseDsConfig(const YAML::Node& root, int world_size, const std::string& origin) {
  return ParseDsConfig(root, world_size, ConfigSource{origin, origin, ""});
}

Result<DsConfig> ParseDsConfig(const YAML::Node& root, int world_size, const ConfigSource& src) {
  const std::string& origin = src.origin;
  if (!root.IsMap()) return Status::InvalidArgument(origin + ": expected a map of DeepSpeed keys");
  DS_RETURN_IF_ERROR(CheckSection(root, "", src, kTopKeys));
  DsConfig c;
  DS_RETURN_IF_ERROR(ReadBatchKey(root, "train_batch_size", origin, &c.batch_keys.train_batch_size));
  DS_RETURN_IF_ERROR(ReadBatchKey(root, "train_micro_batch_size_per_gpu", origin,
                                  &c.batch_keys.train_micro_batch_size_per_gpu));
  DS_RETURN_IF_ERROR(ReadBatchKey(root, "gradient_accumulation_steps", origin,
                                  &c.batch_keys.gradient_accumulation_steps));
  if (world_size > 0) {
    auto batch = ResolveBatch(c.batch_keys, world_size);
    if (!batch.ok()) return Status::InvalidArgument(origin + ": " + batch.status().message());
    c.batch = *batch;
  }

  if (root["optimizer"].IsDefined() && !root["optimizer"].IsNull())
    DS_RETURN_IF_ERROR(ParseOptimizer(root["optimizer"], src, &c));
  if (root["scheduler"].IsDefined() && !root["scheduler"].IsNull())
    DS_RETURN_IF_ERROR(ParseScheduler(root["scheduler"], src, &c));
  DS_RETURN_IF_ERROR(ReadDouble(root, "gradient_clipping", "", origin, &c.gradient_clipping));
  if (c.gradient_clipping < 0)
    return Status::InvalidArgument(Where(origin, root["gradient_clipping"]) +
                                   "'gradient_clipping' must be >= 0");
  DS_RETURN_IF_ERROR(ReadInt(root, "steps_per_print", "", origin, &c.steps_per_print));
  DS_RETURN_IF_ERROR(ReadBool(root, "wall_clock_breakdown", "", origin, &c.wall_clock_breakdown));

  const YAML::Node fp16 = root["fp16"];
  DS_RETURN_IF_ERROR(CheckSection(fp16, "fp16", src, kFp16Keys));
  if (fp16.IsDefined() && fp16.IsMap()) {
    Fp16Config& f = c.fp16;
    DS_RETURN_IF_ERROR(ReadBool(fp16, "enabled", "fp16", origin, &f.enabled));
    DS_RETURN_IF_ERROR(ReadDouble(fp16, "loss_scale", "fp16", origin, &f.loss_scale));
    DS_RETURN_IF_ERROR(ReadInt(fp16, "initial_scale_power", "fp16", origin, &f.initial_scale_power));
    DS_RETURN_IF_ERROR(ReadInt(fp16, "loss_scale_window", "fp16", origin, &f.loss_scale_window));
    DS_RETURN_IF_ERROR(ReadInt(fp16, "hysteresis", "fp16", origin, &f.hysteresis));
    DS_RETURN_IF_ERROR(ReadDouble(fp16, "min_loss_scale", "fp16", origin, &f.min_loss_scale));
    if (f.loss_scale < 0 || f.loss_scale_window < 1 || f.hysteresis < 1 || f.min_loss_scale <= 0 ||
        f.initial_scale_power < 0 || f.initial_scale_power > 64)
      return Status::InvalidArgument(Where(origin, fp16) +
                                     "fp16: expected loss_scale >= 0, loss_scale_window >= 1, "
                                     "hysteresis >= 1, min_loss_scale > 0, initial_scale_power 0..64");
  }
  for (const char* name : {"bf16", "bfloat16"}) {
    const YAML::Node bf16 = root[name];
    DS_RETURN_IF_ERROR(CheckSection(bf16, name, src, {"enabled", "immediate_grad_update"}));
    bool enabled = false;
    if (bf16.IsDefined() && bf16.IsMap())
      DS_RETURN_IF_ERROR(ReadBool(bf16, "enabled", name, origin, &enabled));
    c.bf16 = c.bf16 || enabled;
  }
  if (c.fp16.enabled && c.bf16)
    return Status::InvalidArgument(origin +
                                   ": fp16.enabled and bf16.enabled are both true; enable one");

  DS_RETURN_IF_ERROR(ParseZero(root["zero_optimization"], src, &c.zero));
  return c;
}

Result<DsConfig> LoadDsConfig(const std::string& path, int world_size) {
  DS_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, "DeepSpeed config"));
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(fmt::format("{}:{}: {}", path, e.mark.line + 1, e.msg));
  }
  return ParseDsConfig(root, world_size, path);
}

}  // namespace ds::rt
