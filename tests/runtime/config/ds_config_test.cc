// ds_config.json parsing: DeepSpeed's keys as is, the batch rule, and every
// error word for word.
#include "runtime/config/ds_config.h"

#include <catch2/catch.hpp>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace ds::rt;
using ds::Result;

namespace {

Result<DsConfig> Parse(const std::string& text, int world = 1) {
  return ParseDsConfig(YAML::Load(text), world, "ds.json");
}

std::string Error(const std::string& text, int world = 1) {
  auto r = Parse(text, world);
  REQUIRE_FALSE(r.ok());
  return r.status().message();
}

}  // namespace

TEST_CASE("a typical DeepSpeed config") {
  auto r = Parse(R"({
    "train_batch_size": 128,
    "train_micro_batch_size_per_gpu": 32,
    "optimizer": {"type": "AdamW", "params": {"lr": 0.001, "betas": [0.8, 0.99], "eps": 1e-8,
                  "weight_decay": 0.01}},
    "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": 0, "warmup_max_lr": 0.001,
                  "warmup_num_steps": 100, "total_num_steps": 1000, "warmup_type": "linear"}},
    "gradient_clipping": 1.0,
    "fp16": {"enabled": true, "loss_scale": 0, "initial_scale_power": 12,
             "loss_scale_window": 500, "hysteresis": 2, "min_loss_scale": 1},
    "zero_optimization": {"stage": 2, "reduce_bucket_size": 5e8, "allgather_bucket_size": 2e8,
                          "overlap_comm": true, "contiguous_gradients": true,
                          "offload_optimizer": {"device": "cpu", "pin_memory": true}},
    "steps_per_print": 50, "wall_clock_breakdown": false, "tensorboard": {"enabled": false}
  })", 2);
  REQUIRE(r.ok());
  CHECK(r->batch.train_batch_size == 128);
  CHECK(r->batch.micro_batch == 32);
  CHECK(r->batch.gas == 2);
  CHECK(r->has_optimizer);
  CHECK(r->optimizer.type == OptimizerType::kAdamW);
  CHECK(r->optimizer.beta1 == 0.8);
  CHECK(r->optimizer.beta2 == 0.99);
  CHECK(r->optimizer.weight_decay == 0.01);
  CHECK(r->scheduler.type == SchedulerType::kWarmupDecayLR);
  CHECK(r->scheduler.total_num_steps == 1000);
  CHECK(r->scheduler.warmup_type == "linear");
  CHECK(r->gradient_clipping == 1.0);
  CHECK(r->fp16.enabled);
  CHECK(r->loss_scaler().dynamic);
  CHECK(r->loss_scaler().initial_scale_power == 12);
  CHECK(r->loss_scaler().window == 500);
  CHECK(r->zero.stage == 2);
  CHECK(r->zero.reduce_bucket_size == 500000000);
  CHECK(r->zero.allgather_bucket_size == 200000000);
  CHECK(r->zero.overlap_comm);
  CHECK(r->zero.offload_optimizer == OffloadDevice::kCpu);
  CHECK(r->steps_per_print == 50);
}

TEST_CASE("Adam keeps DeepSpeed's adam_w_mode default (true) unless set") {
  auto r = Parse(R"({"train_batch_size": 8, "optimizer": {"type": "Adam", "params": {"lr": 0.01}}})");
  REQUIRE(r.ok());
  CHECK(r->optimizer.type == OptimizerType::kAdam);
  CHECK(r->optimizer.adam_w_mode);
  CHECK(r->optimizer.lr == 0.01);
  r = Parse(R"({"train_batch_size": 8, "optimizer": {"type": "adam", "params": {"adam_w_mode": false}}})");
  REQUIRE(r.ok());
  CHECK_FALSE(r->optimizer.adam_w_mode);
  r = Parse(R"({"train_batch_size": 8, "optimizer": {"type": "SGD", "params": {"lr": 0.1, "momentum": 0.9, "nesterov": true}}})");
  REQUIRE(r.ok());
  CHECK(r->optimizer.type == OptimizerType::kSgd);
  CHECK(r->optimizer.nesterov);
}

TEST_CASE("batch keys: DeepSpeed's rule with auto and missing values") {
  auto B = [](std::optional<int64_t> t, std::optional<int64_t> m, std::optional<int64_t> g, int w) {
    return ResolveBatch(BatchKeys{t, m, g}, w);
  };
  auto r = B(64, std::nullopt, std::nullopt, 2);
  REQUIRE(r.ok());
  CHECK((r->micro_batch == 32 && r->gas == 1));
  r = B(std::nullopt, 16, 4, 3);
  REQUIRE(r.ok());
  CHECK(r->train_batch_size == 192);
  r = B(96, std::nullopt, 3, 2);
  REQUIRE(r.ok());
  CHECK(r->micro_batch == 16);
  r = B(std::nullopt, 64, std::nullopt, 2);
  REQUIRE(r.ok());
  CHECK((r->train_batch_size == 128 && r->gas == 1));

  auto cfg = Parse(R"({"train_batch_size": "auto", "train_micro_batch_size_per_gpu": 8,
                       "gradient_accumulation_steps": "auto"})", 4);
  REQUIRE(cfg.ok());
  CHECK(cfg->batch.train_batch_size == 32);

  CHECK(Error(R"({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 16,
                  "gradient_accumulation_steps": 1})", 2) ==
        "ds.json: train_batch_size (64) != train_micro_batch_size_per_gpu (16) * "
        "gradient_accumulation_steps (1) * world size (2) = 32");
  CHECK(Error(R"({"train_batch_size": 100, "train_micro_batch_size_per_gpu": 16})", 2) ==
        "ds.json: train_batch_size (100) is not divisible by train_micro_batch_size_per_gpu (16) "
        "* world size (2)");
  CHECK(Error(R"({"train_batch_size": 7})", 2) ==
        "ds.json: train_batch_size (7) is not divisible by world size (2)");
  CHECK(Error(R"({"gradient_accumulation_steps": 2})") ==
        "ds.json: either train_batch_size or train_micro_batch_size_per_gpu must be given");
  CHECK(Error("{\"train_batch_size\": -4}") ==
        "ds.json:1: 'train_batch_size' expects a positive integer or \"auto\", got '-4'");
}

TEST_CASE("unknown and contradictory keys are errors naming the key") {
  CHECK(Error("{\"train_batch_size\": 8,\n \"zero_optimisation\": {\"stage\": 1}}") ==
        "ds.json:2:2: unknown key 'zero_optimisation' (did you mean 'zero_optimization'?)");
  CHECK(Error("{\"train_batch_size\": 8,\n \"zero_optimization\": {\"stagee\": 1}}") ==
        "ds.json:2:24: unknown key 'stagee' in zero_optimization (did you mean 'stage'?)");
  CHECK(Error("{\"train_batch_size\": 8, \"optimizer\": {\"type\": \"Adam\", \"params\": {\"betas1\": 0.9}}}") ==
        "ds.json:1:66: unknown key 'betas1' in optimizer.params (did you mean 'betas'?)");
  // optimizer.type is case-insensitive, as in DeepSpeed.
  CHECK(Parse("{\"train_batch_size\": 8, \"optimizer\": {\"type\": \"Adamw\"}}").ok());
  CHECK(Error("{\"train_batch_size\": 8, \"optimizer\": {\"type\": \"Adan\"}}") ==
        "ds.json:1: unsupported optimizer.type 'Adan': expected Adam, AdamW or SGD (did you mean 'Adam'?)");
  CHECK(Error("{\"train_batch_size\": 8, \"scheduler\": {\"type\": \"WarmupDecayLR\", \"params\": {}}}") ==
        "ds.json:1: scheduler WarmupDecayLR needs scheduler.params.total_num_steps > 0");
  CHECK(Error("{\"train_batch_size\": 8, \"scheduler\": {\"type\": \"WarmupLR\", \"params\": {\"warmup_type\": \"exp\"}}}") ==
        "ds.json:1: 'scheduler.params.warmup_type' expects log or linear, got 'exp'");
  CHECK(Error("{\"train_batch_size\": 8, \"fp16\": {\"enabled\": true}, \"bf16\": {\"enabled\": true}}") ==
        "ds.json: fp16.enabled and bf16.enabled are both true; enable one");
  CHECK(Error("{\"train_batch_size\": 8, \"zero_optimization\": {\"stage\": 4}}") ==
        "ds.json:1: 'zero_optimization.stage' expects 0, 1, 2 or 3, got 4");
  CHECK(Error("{\"train_batch_size\": 8, \"zero_optimization\": {\"offload_optimizer\": {\"device\": \"nvme\"}}}") ==
        "ds.json:1: 'zero_optimization.offload_optimizer.device' expects cpu or none, got 'nvme'");
  CHECK(Error("{\"train_batch_size\": 8, \"fp16\": {\"enabled\": \"maybe\"}}") ==
        "ds.json:1: 'fp16.enabled' expects true or false, got 'maybe'");
  CHECK(Error("{\"train_batch_size\": 8, \"gradient_clipping\": [1]}") ==
        "ds.json:1: 'gradient_clipping' expects a number, got a list");
}

TEST_CASE("stage3_* keys and the bfloat16 alias are accepted") {
  auto r = Parse(R"({"train_batch_size": 8, "bfloat16": {"enabled": true},
    "zero_optimization": {"stage": 3, "stage3_max_live_parameters": 1e9,
                          "stage3_some_future_knob": true}})");
  REQUIRE(r.ok());
  CHECK(r->bf16);
  CHECK(r->zero.stage == 3);
}

TEST_CASE("LoadDsConfig reads a file and names it in errors") {
  char tmpl[] = "/tmp/dsmodel-dscfg-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string path = dir + "/ds_config.json";
  std::ofstream(path) << "{\n  \"train_micro_batch_size_per_gpu\": 4,\n  \"bf16\": {\"enabled\": true}\n}\n";
  auto r = LoadDsConfig(path, 2);
  REQUIRE(r.ok());
  CHECK(r->bf16);
  CHECK(r->batch.train_batch_size == 8);
  std::ofstream(path) << "{\n  \"train_batch_size\": 8,\n  \"optimizer\": {\n";
  r = LoadDsConfig(path, 1);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().rfind(path + ":", 0) == 0);
  auto missing = LoadDsConfig(dir + "/nope.json", 1);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message() == "DeepSpeed config " + dir + "/nope.json: No such file or directory");
  std::filesystem::remove_all(dir);
}
