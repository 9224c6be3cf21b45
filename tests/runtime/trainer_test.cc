// The training loop end to end on a small synthetic problem with forked Gloo
// ranks: a checkpoint saved by 3 ranks at ZeRO stage 2 resumes on 2 ranks at
// stage 3 and continues the uninterrupted loss curve; newer corrupt or
// partial checkpoints are skipped; ranks that would resume different
// checkpoints refuse to train; training learns.
#include <cmath>
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "runtime/checkpoint/checkpoint.h"
#include "runtime/trainer.h"
#include "tests/runtime/multiproc.h"
#include "wire/snapshot_handoff.h"

using namespace ds::rt;
using ds::rt::testing::MultiProc;
namespace fs = std::filesystem;

namespace {

std::string Config(int stage, int max_steps) {
  return "trainer:\n"
         "  model: {layers: [20, 16, 5], activation: relu}\n"
         "  data: {dataset: synthetic, samples: 720, features: 20, classes: 5}\n"
         "  epochs: 2\n"
         "  max_steps: " + std::to_string(max_steps) + "\n"
         "  seed: 5\n"
         "  checkpoint: {every_steps: 10, keep: 3}\n"
         "  config:\n"
         "    train_batch_size: 12\n"
         "    optimizer: {type: Adam, params: {lr: 0.01}}\n"
         "    zero_optimization: {stage: " + std::to_string(stage) + "}\n"
         "    steps_per_print: 1\n";
}

// Runs Train on `world` ranks; rank 0 writes its losses (and the resume
// step, the test accuracy) to dir/<name>.
std::vector<float> RunJob(MultiProc& mp, int world, int stage, int max_steps,
                          const std::string& ckpt_dir, const std::string& name) {
  auto codes = mp.Run(world, [&](Communicator& c) {
    TrainerConfigOptions o;
    o.world_size = c.size();
    auto cfg = ParseTrainerConfig(Config(stage, max_steps), o);
    if (!cfg.ok()) { std::fprintf(stderr, "%s\n", cfg.status().message().c_str()); return 1; }
    TrainerRuntime rt;
    rt.checkpoint_dir = ckpt_dir;
    rt.quiet = true;
    auto r = Train(*cfg, c, rt);
    if (!r.ok()) { std::fprintf(stderr, "%s\n", r.status().message().c_str()); return 2; }
    if (c.rank() == 0) {
      std::vector<float> out = {float(r->resumed_from_step), float(r->test_accuracy)};
      for (double l : r->losses) out.push_back(float(l));
      mp.WriteFloats(name, out);
    }
    return 0;
  });
  REQUIRE(codes == std::vector<int>(world, 0));
  return mp.ReadFloats(name);
}

}  // namespace

TEST_CASE("3 ranks at stage 2 resume on 2 ranks at stage 3 with the same loss curve", "[trainer]") {
  MultiProc mp;
  const std::string ckpt = mp.dir() + "/ckpt";
  auto full = RunJob(mp, 2, 3, 20, "", "full");
  REQUIRE(full.size() == 2 + 20);
  CHECK(full[0] == -1);  // fresh start

  auto first = RunJob(mp, 3, 2, 10, ckpt, "first");
  REQUIRE(first.size() == 2 + 10);
  for (int i = 0; i < 10; ++i) CHECK(first[2 + i] == Approx(full[2 + i]).epsilon(1e-4));
  REQUIRE(ListCheckpoints(ckpt).size() == 1);

  // A newer checkpoint with a corrupt shard, and a newer partial one.
  fs::copy(ckpt + "/step_00000010", ckpt + "/step_00000015", fs::copy_options::recursive);
  {
    std::fstream f(ckpt + "/step_00000015/shard_1.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x7f');
  }
  fs::create_directories(ckpt + "/step_00000018");
  std::ofstream(ckpt + "/step_00000018/shard_0.bin") << "partial";

  auto second = RunJob(mp, 2, 3, 20, ckpt, "second");
  REQUIRE(second.size() == 2 + 10);
  CHECK(second[0] == 10);  // skipped 18 (no manifest) and 15 (crc mismatch)
  for (int i = 0; i < 10; ++i) {
    INFO("step " << 11 + i);
    CHECK(second[2 + i] == Approx(full[12 + i]).epsilon(1e-4));
  }
  CHECK(second[1] == Approx(full[1]).margin(0.02));
  // The final checkpoint of the resumed run exists; keep: 3 prunes older ones.
  auto list = ListCheckpoints(ckpt);
  CHECK(fs::path(list.back()).filename() == "step_00000020");
}

TEST_CASE("ranks that would resume different checkpoints never train on the mixture", "[trainer]") {
  // Rank 0's directory holds a checkpoint of step 10, rank 1's none: a
  // "shared" directory that is not shared.
  MultiProc mp;
  const std::string a = mp.dir() + "/a", b = mp.dir() + "/b";
  RunJob(mp, 1, 1, 10, a, "one");
  REQUIRE(ListCheckpoints(a).size() == 1);
  std::ifstream manifest(a + "/step_00000010/manifest.json");
  const std::string set = ds::ManifestDigest(std::string(std::istreambuf_iterator<char>(manifest), {}));
  auto codes = mp.Run(2, [&](Communicator& c) {
    TrainerConfigOptions o;
    o.world_size = c.size();
    auto cfg = ParseTrainerConfig(Config(1, 20), o);
    if (!cfg.ok()) return 1;
    TrainerRuntime rt;
    rt.checkpoint_dir = c.rank() == 0 ? a : b;
    rt.quiet = true;
    auto r = Train(*cfg, c, rt);
    if (r.ok()) return 0;
    std::ofstream(mp.dir() + "/error" + std::to_string(c.rank())) << r.status().message();
    return 3;
  });
  CHECK(codes == std::vector<int>{3, 3});
  const std::string expected = "ranks resumed different checkpoints: rank 0 step 10 (save " + set +
                               "), rank 1 a fresh start: refusing to train on a mixture (is the checkpoint directory "
                               "the same one on every node?)";
  for (int rank : {0, 1}) {
    std::ifstream in(mp.dir() + "/error" + std::to_string(rank));
    CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == expected);
  }
  CHECK(ListCheckpoints(b).empty());  // nothing was trained, nothing saved
}

TEST_CASE("training learns the synthetic task", "[trainer]") {
  MultiProc mp;
  auto r = RunJob(mp, 2, 0, 100, "", "learn");
  REQUIRE(r.size() > 10);
  CHECK(r.back() < r[2]);   // loss went down
  CHECK(r[1] > 0.6);        // test accuracy well above chance (0.2)
}
