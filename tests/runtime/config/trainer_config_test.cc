// The trainer: section of train.yaml.
#include "runtime/config/trainer_config.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace ds::rt;

namespace {

std::string Error(const std::string& text, int world = 1) {
  TrainerConfigOptions o;
  o.world_size = world;
  o.origin = "train.yaml";
  auto r = ParseTrainerConfig(text, o);
  REQUIRE_FALSE(r.ok());
  return r.status().message();
}

}  // namespace

TEST_CASE("the documented trainer section parses") {
  TrainerConfigOptions o;
  o.world_size = 2;
  auto r = ParseTrainerConfig(R"(
trainer:
  model: {layers: [784, 256, 10], activation: gelu}
  data: {dataset: fashion-mnist, path: /data/fm, drop_last: false, normalize: unit}
  epochs: 3
  seed: 7
  config:
    train_micro_batch_size_per_gpu: 64
    optimizer: {type: Adam, params: {lr: 0.001}}
    zero_optimization: {stage: 3}
  checkpoint: {dir: ckpt, every_steps: 200, keep: 3}
  metrics: {dir: runs/x}
  eval: {every_epoch: false}
)", o);
  REQUIRE(r.ok());
  CHECK(r->model.sizes == std::vector<int>{784, 256, 10});
  CHECK(r->model.activation == Activation::kGelu);
  CHECK(r->data.path == "/data/fm");
  CHECK_FALSE(r->data.drop_last);
  CHECK(r->data.normalize == PixelNorm::kUnit);
  CHECK(r->epochs == 3);
  CHECK(r->seed == 7);
  CHECK(r->ds.batch.train_batch_size == 128);
  CHECK(r->ds.zero.stage == 3);
  CHECK(r->checkpoint.every_steps == 200);
  CHECK(r->checkpoint.keep == 3);
  CHECK(r->metrics.dir == "runs/x");
  CHECK_FALSE(r->eval.every_epoch);
}

TEST_CASE("defaults, synthetic data and max_steps alone") {
  auto r = ParseTrainerConfig(
      "data: {dataset: synthetic, samples: 1000, features: 20, classes: 4}\n"
      "model: {layers: [20, 8, 4]}\nmax_steps: 50\n", {});
  REQUIRE(r.ok());
  CHECK(r->data.synthetic.samples == 1000);
  CHECK(r->epochs == 50);  // never binds: every epoch has at least one step
  CHECK(r->max_steps == 50);
  CHECK(r->ds.batch.micro_batch == 64);
  CHECK_FALSE(r->ds.has_optimizer);
  CHECK(r->backend == "gloo");
  CHECK(r->device.empty());  // decided at start: cuda where a CUDA build sees a GPU
  CHECK_FALSE(r->tf32);
}

TEST_CASE("trainer errors name the key path") {
  CHECK(Error("trainer:\n  model: {layers: [784, 10], activaton: relu}\n") ==
        "train.yaml:2:30: unknown key 'activaton' in trainer.model (did you mean 'activation'?)");
  CHECK(Error("trainer:\n  epoch: 3\n") ==
        "train.yaml:2:3: unknown key 'epoch' in trainer (did you mean 'epochs'?)");
  CHECK(Error("trainer:\n  model: {activation: relu6}\n") ==
        "train.yaml:2: 'trainer.model.activation' expects relu or gelu, got 'relu6' (did you mean 'relu'?)");
  CHECK(Error("trainer:\n  data: {dataset: mnist}\n") ==
        "train.yaml:2: 'trainer.data.dataset' expects fashion-mnist or synthetic, got 'mnist'");
  CHECK(Error("trainer:\n  model: {layers: [100, 10]}\n") ==
        "train.yaml: trainer.model.layers must start with 784 and end with 10 for fashion-mnist, got [100, ..., 10]");
  CHECK(Error("trainer:\n  epochs: 1\n  config: {train_batch_size: 10}\n", 4) ==
        "train.yaml trainer.config: train_batch_size (10) is not divisible by world size (4)");
  CHECK(Error("trainer:\n  config:\n    train_batch_size: 8\n    zero_optimization: {stag: 1}\n") ==
        "train.yaml:4:25: unknown key 'stag' in trainer.config.zero_optimization (did you mean 'stage'?)");
  CHECK(Error("trainer:\n  epochs: x\n") == "train.yaml:2: 'trainer.epochs' expects an integer, got 'x'");
  CHECK(Error("trainer:\n  backend: ncl\n") ==
        "train.yaml:2: 'trainer.backend' expects gloo or nccl, got 'ncl' (did you mean 'nccl'?)");
  CHECK(Error("trainer:\n  device: cud\n") ==
        "train.yaml:2: 'trainer.device' expects cpu or cuda, got 'cud' (did you mean 'cuda'?)");
  CHECK(Error("trainer: [1, 2]\n") == "train.yaml: expected a 'trainer:' map");
  CHECK(Error("trainer: {model: [\n") .rfind("train.yaml:", 0) == 0);
}

TEST_CASE("config by path resolves against the job file's directory") {
  char tmpl[] = "/tmp/dsmodel-tcfg-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  std::ofstream(dir + "/ds_config.json") << R"({"train_batch_size": 32, "gradient_accumulation_steps": 2})";
  std::ofstream(dir + "/train.yaml") << "trainer:\n  config: ds_config.json\n  epochs: 2\n";
  TrainerConfigOptions o;
  o.world_size = 2;
  auto r = LoadTrainerConfig(dir + "/train.yaml", o);
  REQUIRE(r.ok());
  CHECK(r->config_path == dir + "/ds_config.json");
  CHECK(r->ds.batch.micro_batch == 8);
  std::ofstream(dir + "/train.yaml") << "trainer:\n  config: missing.json\n";
  auto m = LoadTrainerConfig(dir + "/train.yaml", o);
  REQUIRE_FALSE(m.ok());
  CHECK(m.status().message() == "DeepSpeed config " + dir + "/missing.json: No such file or directory");
  std::filesystem::remove_all(dir);
}

TEST_CASE("sizes that cannot be allocated are errors at parse time") {
  CHECK(Error("trainer:\n  model: {layers: [784, 1048576, 10]}\n") ==
        "train.yaml:2: 'trainer.model.layers' has 833617930 parameters, more than the maximum 268435456");
  CHECK(Error("trainer:\n  model: {layers: [784, 1048576, 1048576, 1048576, 10]}\n") ==
        "train.yaml:2: 'trainer.model.layers' has 2199858970634 parameters, more than the maximum 268435456");
  CHECK(Error("trainer:\n  data: {dataset: synthetic, samples: 1000000000, features: 20, classes: 4}\n"
              "  model: {layers: [20, 4]}\n") ==
        "train.yaml:2: 'trainer.data' has samples x features = 1000000000 x 20 values, more than the maximum 268435456");
  // A large model that fits (237 million parameters).
  TrainerConfigOptions o;
  o.origin = "train.yaml";
  CHECK(ParseTrainerConfig("trainer:\n  model: {layers: [784, 15000, 15000, 10]}\n", o).ok());
}
