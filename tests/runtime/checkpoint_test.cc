// Checkpoint files on their own: round trip through one rank, keep: K
// pruning, incomplete and corrupt checkpoints skipped, shape mismatches
// rejected. (Resharding across world sizes and stages: trainer_test.cc.)
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "runtime/checkpoint.h"

using namespace ds::rt;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  TempDir() {
    char t[] = "/tmp/dstrain-ck-XXXXXX";
    path = mkdtemp(t);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string path;
};

ShardState MakeShard(size_t n, float base) {
  ShardState s;
  s.segments = {{0, 0, n / 2, 0}, {n / 2, n / 2, n - n / 2, 1}};
  s.master.resize(n);
  s.state.assign(2, std::vector<float>(n));
  for (size_t i = 0; i < n; ++i) {
    s.master[i] = base + i;
    s.state[0][i] = -float(i);
    s.state[1][i] = 0.5f * i;
  }
  return s;
}

}  // namespace

TEST_CASE("checkpoint round trip and keep", "[checkpoint]") {
  TempDir d;
  LocalCommunicator comm;
  for (int step = 1; step <= 4; ++step) {
    CheckpointMeta m;
    m.step = step;
    m.applied_steps = step - 1;
    m.epoch = 1;
    m.sample_position = 24 * step;
    m.rng = {1, 2, 3, 0xffffffffffffffffULL};
    m.scaler.scale = 1024;
    m.scaler.cur_hysteresis = 2;
    m.zero_stage = 2;
    m.config_hash = ConfigHash("x");
    m.num_params = 10;
    m.state_slots = 2;
    REQUIRE(SaveCheckpoint(d.path, m, MakeShard(10, float(step)), comm, 2).ok());
  }
  auto list = ListCheckpoints(d.path);
  REQUIRE(list.size() == 2);
  CHECK(fs::path(list[0]).filename() == "step_00000003");
  auto ck = LoadNewestCheckpoint(d.path, 10, 2);
  REQUIRE(ck);
  CHECK(ck->meta.step == 4);
  CHECK(ck->meta.applied_steps == 3);
  CHECK(ck->meta.sample_position == 96);
  CHECK(ck->meta.rng[3] == 0xffffffffffffffffULL);
  CHECK(ck->meta.scaler.scale == 1024);
  CHECK(ck->meta.world_size == 1);
  CHECK(ck->master[9] == 4 + 9);
  CHECK(ck->state[0][9] == -9);
  CHECK(ck->state[1][8] == 4);

  SECTION("a corrupt newest checkpoint is skipped") {
    std::fstream f(list[1] + "/shard_0.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.put('\x01');
    f.close();
    auto older = LoadNewestCheckpoint(d.path, 10, 2);
    REQUIRE(older);
    CHECK(older->meta.step == 3);
  }
  SECTION("a checkpoint without manifest is incomplete") {
    fs::remove(list[1] + "/manifest.json");
    CHECK(ListCheckpoints(d.path).size() == 1);
    CHECK(LoadNewestCheckpoint(d.path, 10, 2)->meta.step == 3);
  }
  SECTION("another model or optimizer does not load") {
    CHECK_FALSE(LoadNewestCheckpoint(d.path, 11, 2));
    CHECK_FALSE(LoadNewestCheckpoint(d.path, 10, 1));
  }
}

TEST_CASE("no checkpoint directory means a fresh start", "[checkpoint]") {
  CHECK_FALSE(LoadNewestCheckpoint("/nonexistent/dstrain", 10, 2));
  CHECK(ListCheckpoints("/nonexistent/dstrain").empty());
}
