#include "runtime/config/trainer_config.h"


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
using cfg::ReadInt;
using cfg::ReadString;
using cfg::Where;

Status ParseModel(const YAML::Node& m, const std::string& origin, MlpConfig* out) {
  const std::string path = "trainer.model";
  DS_RETURN_IF_ERROR(CheckSection(m, path, {origin, origin, ""}, {"layers", "activation"}));
  if (!m.IsDefined() || m.IsNull()) return Status::OK();
  const YAML::Node layers = m["layers"];
  if (layers.IsDefined() && !layers.IsNull()) {
    if (!layers.IsSequence() || layers.size() < 2)
      return Status::InvalidArgument(Where(origin, layers) + "'" + path +
                                     ".layers' expects a list of at least 2 sizes, e.g. [784, 512, 10]");
    out->sizes.clear();
    for (const auto& v : layers) {
      auto n = v.IsScalar() ? ParseInt(v.Scalar()) : std::nullopt;
      if (!n || *n <= 0 || *n > (1 << 20))
        return Status::InvalidArgument(fmt::format("{}'{}.layers' expects positive sizes, got '{}'",
                                                   Where(origin, v), path, v.IsScalar() ? v.Scalar() : "?"));
      out->sizes.push_back(static_cast<int>(*n));
    }
    // Weights and biases. Each term is below 2^41 (sizes <= 2^20); the sum
    // stops growing past 2^62, so it cannot overflow however many layers.
    int64_t params = 0;
    for (size_t i = 1; i < out->sizes.size() && params < (int64_t{1} << 62); ++i)
      params += int64_t{out->sizes[i - 1]} * out->sizes[i] + out->sizes[i];
    if (params > kMaxModelParameters)
      return Status::InvalidArgument(fmt::format("{}'{}.layers' has {} parameters, more than the maximum {}",
                                                 Where(origin, layers), path, params, kMaxModelParameters));
  }
  std::string act;
  DS_RETURN_IF_ERROR(ReadString(m, "activation", path, origin, &act));
  if (act.empty() || act == "relu") {
    out->activation = Activation::kRelu;
  } else if (act == "gelu") {
    out->activation = Activation::kGelu;
  } else {
    std::string msg = fmt::format("{}'{}.activation' expects relu or gelu, got '{}'",
                                  Where(origin, m["activation"]), path, act);
    msg += DidYouMeanHint(act, {"relu", "gelu"});
    return Status::InvalidArgument(msg);
  }
  return Status::OK();
}

Status ParseData(const YAML::Node& d, const std::string& origin, DataSection* out) {
  const std::string path = "trainer.data";
  DS_RETURN_IF_ERROR(CheckSection(d, path, {origin, origin, ""},
                                  {"dataset", "path", "drop_last", "shuffle", "normalize",
                                   "samples", "features", "classes", "seed"}));
  if (!d.IsDefined() || d.IsNull()) return Status::OK();
  DS_RETURN_IF_ERROR(ReadString(d, "dataset", path, origin, &out->dataset));
  if (out->dataset != "fashion-mnist" && out->dataset != "synthetic") {
    std::string msg = fmt::format("{}'{}.dataset' expects fashion-mnist or synthetic, got '{}'",
                                  Where(origin, d["dataset"]), path, out->dataset);
    msg += DidYouMeanHint(out->dataset, {"fashion-mnist", "synthetic"});
    return Status::InvalidArgument(msg);
  }
  DS_RETURN_IF_ERROR(ReadString(d, "path", path, origin, &out->path));
  DS_RETURN_IF_ERROR(ReadBool(d, "drop_last", path, origin, &out->drop_last));
  DS_RETURN_IF_ERROR(ReadBool(d, "shuffle", path, origin, &out->shuffle));
  std::string norm = "mean_std";
  DS_RETURN_IF_ERROR(ReadString(d, "normalize", path, origin, &norm));
  if (norm == "mean_std") {
    out->normalize = PixelNorm::kMeanStd;
  } else if (norm == "unit") {
    out->normalize = PixelNorm::kUnit;
  } else {
    return Status::InvalidArgument(fmt::format("{}'{}.normalize' expects mean_std or unit, got '{}'",
                                               Where(origin, d["normalize"]), path, norm));
  }
  SyntheticOptions& s = out->synthetic;
  DS_RETURN_IF_ERROR(ReadInt(d, "samples", path, origin, &s.samples));
  DS_RETURN_IF_ERROR(ReadInt(d, "features", path, origin, &s.features));
  DS_RETURN_IF_ERROR(ReadInt(d, "classes", path, origin, &s.classes));
  int64_t seed = static_cast<int64_t>(s.seed);
  DS_RETURN_IF_ERROR(ReadInt(d, "seed", path, origin, &seed));
  s.seed = static_cast<uint64_t>(seed);
  if (s.samples <= 0 || s.features <= 0 || s.classes < 2)
    return Status::InvalidArgument(Where(origin, d) + "'" + path +
                                   "' expects samples > 0, features > 0 and classes >= 2");
  if (s.samples > kMaxSyntheticValues / s.features)
    return Status::InvalidArgument(fmt::format(
        "{}'{}' has samples x features = {} x {} values, more than the maximum {}", Where(origin, d),
        path, s.samples, s.features, kMaxSyntheticValues));
  return Status::OK();
}

// epochs, max_steps, backend, device, tf32 and seed: how long, where and how to train.
Status ParseRun(const YAML::Node& root, const std::string& origin, TrainerConfig* t) {
  DS_RETURN_IF_ERROR(ReadInt(root, "epochs", "trainer", origin, &t->epochs));
  DS_RETURN_IF_ERROR(ReadInt(root, "max_steps", "trainer", origin, &t->max_steps));
  DS_RETURN_IF_ERROR(ReadString(root, "backend", "trainer", origin, &t->backend));
  if (t->backend != "gloo" && t->backend != "nccl")
    return Status::InvalidArgument(fmt::format("{}'trainer.backend' expects gloo or nccl, got '{}'{}",
                                               Where(origin, root["backend"]), t->backend,
                                               DidYouMeanHint(t->backend, {"gloo", "nccl"})));
  DS_RETURN_IF_ERROR(ReadString(root, "device", "trainer", origin, &t->device));
  if (!t->device.empty() && t->device != "cpu" && t->device != "cuda")
    return Status::InvalidArgument(fmt::format("{}'trainer.device' expects cpu or cuda, got '{}'{}",
                                               Where(origin, root["device"]), t->device,
                                               DidYouMeanHint(t->device, {"cpu", "cuda"})));
  DS_RETURN_IF_ERROR(ReadBool(root, "tf32", "trainer", origin, &t->tf32));
  // max_steps alone: epochs = max_steps, a bound that never binds (every epoch
  // has at least one step) and keeps steps_per_epoch * epochs finite.
  if (t->max_steps > 0 && !root["epochs"].IsDefined()) t->epochs = t->max_steps;
  if (t->epochs < 0 || t->max_steps < 0 || (t->epochs == 0 && t->max_steps == 0))
    return Status::InvalidArgument(origin + ": trainer.epochs and trainer.max_steps must be >= 0 "
                                            "and one of them > 0");
  int64_t seed = static_cast<int64_t>(t->seed);
  DS_RETURN_IF_ERROR(ReadInt(root, "seed", "trainer", origin, &seed));
  t->seed = static_cast<uint64_t>(seed);
  return Status::OK();
}

// The model's first and last sizes must fit the data.
Status CheckModelFitsData(const TrainerConfig& t, const std::string& origin) {
  const auto& sizes = t.model.sizes;
  if (t.data.dataset == "synthetic") {
    if (sizes.front() != t.data.synthetic.features || sizes.back() != t.data.synthetic.classes)
      return Status::InvalidArgument(fmt::format(
          "{}: trainer.model.layers [{}, ..., {}] does not fit the synthetic data "
          "(features {}, classes {})", origin, sizes.front(), sizes.back(),
          t.data.synthetic.features, t.data.synthetic.classes));
  } else if (sizes.front() != 784 || sizes.back() != 10) {
    return Status::InvalidArgument(fmt::format(
        "{}: trainer.model.layers must start with 784 and end with 10 for fashion-mnist, got "
        "[{}, ..., {}]", origin, sizes.front(), sizes.back()));
  }
  return Status::OK();
}

// trainer.config: DeepSpeed's keys inline, a ds_config.json path, or absent
// (DeepSpeed's defaults with a micro-batch of 64).
Status ParseDeepSpeed(const YAML::Node& config, const TrainerConfigOptions& options,
                      TrainerConfig* t) {
  const std::string& origin = options.origin;
  if (!config.IsDefined() || config.IsNull()) {
    YAML::Node defaults;
    defaults["train_micro_batch_size_per_gpu"] = 64;
    DS_ASSIGN_OR_RETURN(t->ds, ParseDsConfig(defaults, options.world_size, origin + " (defaults)"));
  } else if (config.IsScalar()) {
    std::string p = config.Scalar();
    if (!p.empty() && p[0] != '/') p = options.base_dir + "/" + p;
    t->config_path = p;
    if (options.read_config_file) {
      DS_ASSIGN_OR_RETURN(t->ds, LoadDsConfig(p, options.world_size));
    }
  } else if (config.IsMap()) {
    const ConfigSource source{origin + " trainer.config", origin, "trainer.config"};
    DS_ASSIGN_OR_RETURN(t->ds, ParseDsConfig(config, options.world_size, source));
  } else {
    return Status::InvalidArgument(Where(origin, config) +
                                   "'trainer.config' expects a ds_config.json path or a map");
  }
  return Status::OK();
}

// checkpoint, metrics and eval: what the trainer writes besides training.
Status ParseOutputs(const YAML::Node& root, const std::string& origin, TrainerConfig* t) {
  const ConfigSource source{origin, origin, ""};
  const YAML::Node ck = root["checkpoint"];
  DS_RETURN_IF_ERROR(CheckSection(ck, "trainer.checkpoint", source, {"dir", "every_steps", "keep"}));
  if (ck.IsDefined() && ck.IsMap()) {
    DS_RETURN_IF_ERROR(ReadString(ck, "dir", "trainer.checkpoint", origin, &t->checkpoint.dir));
    DS_RETURN_IF_ERROR(ReadInt(ck, "every_steps", "trainer.checkpoint", origin, &t->checkpoint.every_steps));
    DS_RETURN_IF_ERROR(ReadInt(ck, "keep", "trainer.checkpoint", origin, &t->checkpoint.keep));
    if (t->checkpoint.every_steps < 0 || t->checkpoint.keep < 1)
      return Status::InvalidArgument(Where(origin, ck) +
                                     "trainer.checkpoint expects every_steps >= 0 and keep >= 1");
  }
  const YAML::Node me = root["metrics"];
  DS_RETURN_IF_ERROR(CheckSection(me, "trainer.metrics", source, {"dir"}));
  if (me.IsDefined() && me.IsMap())
    DS_RETURN_IF_ERROR(ReadString(me, "dir", "trainer.metrics", origin, &t->metrics.dir));
  const YAML::Node ev = root["eval"];
  DS_RETURN_IF_ERROR(CheckSection(ev, "trainer.eval", source, {"every_epoch"}));
  if (ev.IsDefined() && ev.IsMap())
    DS_RETURN_IF_ERROR(ReadBool(ev, "every_epoch", "trainer.eval", origin, &t->eval.every_epoch));
  return Status::OK();
}

}  // namespace

Result<TrainerConfig> ParseTrainerSection(const YAML::Node& root,
                                          const TrainerConfigOptions& options) {
  const std::string& origin = options.origin;
  if (!root.IsMap()) return Status::InvalidArgument(origin + ": expected a 'trainer:' map");
  DS_RETURN_IF_ERROR(CheckSection(root, "trainer", {origin, origin, ""},
                                  {"model", "data", "epochs", "max_steps", "seed", "backend",
                                   "device", "tf32", "config", "checkpoint", "metrics", "eval"}));
  TrainerConfig t;
  DS_RETURN_IF_ERROR(ParseModel(root["model"], origin, &t.model));
  DS_RETURN_IF_ERROR(ParseData(root["data"], origin, &t.data));
  DS_RETURN_IF_ERROR(ParseRun(root, origin, &t));
  DS_RETURN_IF_ERROR(CheckModelFitsData(t, origin));
  DS_RETURN_IF_ERROR(ParseDeepSpeed(root["config"], options, &t));
  DS_RETURN_IF_ERROR(ParseOutputs(root, origin, &t));
  return t;
}

Result<TrainerConfig> ParseTrainerConfig(const std::string& yaml_text,
                                         const TrainerConfigOptions& options) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(fmt::format("{}:{}: {}", options.origin, e.mark.line + 1, e.msg));
  }
  if (root.IsMap() && root["trainer"].IsDefined()) root = root["trainer"];
  return ParseTrainerSection(root, options);
}

Result<TrainerConfig> LoadTrainerConfig(const std::string& path, TrainerConfigOptions options) {
  DS_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, "trainer config"));
  if (options.origin == "trainer") options.origin = path;
  if (options.base_dir == ".") {
    const auto slash = path.rfind('/');
    if (slash != std::string::npos) options.base_dir = path.substr(0, slash);
  }
  return ParseTrainerConfig(text, options);
}

}  // namespace ds::rt
