// Snapshot handoffs (runtime/checkpoint_snapshot.h) through one rank: the
// names and bytes the agent gets, the shard equal to a checkpoint's, and the
// exact step loaded back from a step directory the agent assembled; a
// missing or corrupt step is an error naming it.
#include <filesystem>

#include <catch2/catch.hpp>

#include "common/snapshot_handoff.h"
#include "runtime/checkpoint_format.h"
#include "runtime/checkpoint_snapshot.h"
#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"

namespace ds::rt {
namespace {
namespace fs = std::filesystem;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

ShardState Shard(float base) {
  ShardState s;
  s.segments = {{0, 0, 6, 0}};
  s.master.resize(6);
  s.state.assign(2, std::vector<float>(6));
  for (size_t i = 0; i < 6; ++i) {
    s.master[i] = base + static_cast<float>(i);
    s.state[0][i] = -static_cast<float>(i);
    s.state[1][i] = 0.25f * static_cast<float>(i);
  }
  return s;
}

CheckpointMeta Meta(int64_t step) {
  CheckpointMeta m;
  m.step = step;
  m.applied_steps = step;
  m.epoch = 2;
  m.sample_position = 96;
  m.num_params = 6;
  m.state_slots = 2;
  m.config_hash = ConfigHash("c");
  return m;
}

TEST_CASE("snapshot: the handoff is the shard file and the manifest, named for the agent", "[snapshots]") {
  TempDir dir;
  fs::create_directory(dir / "incoming");
  LocalCommunicator comm;
  std::string buffer;
  REQUIRE(SaveSnapshot(dir.path(), Meta(300), Shard(1), comm, &buffer).ok());
  const std::string shard = EncodeShard(0, Shard(1));
  const Handoff h{300, 0, 1, Crc32(shard)};
  CHECK(ReadFile(dir / ("incoming/" + HandoffName(h, kHandoffShard))) == shard);
  const std::string manifest = ReadFile(dir / ("incoming/" + HandoffName(h, kHandoffManifest)));
  CHECK_THAT(manifest, Catch::Contains("\"step\": 300"));
  CHECK_THAT(manifest, Catch::Contains(std::to_string(Crc32(shard))));
  // The buffer is reused by the next one.
  REQUIRE(SaveSnapshot(dir.path(), Meta(350), Shard(2), comm, &buffer).ok());
  CHECK(buffer == EncodeShard(0, Shard(2)));
  // Nothing else, no temporary file left behind.
  CHECK(std::distance(fs::directory_iterator(dir / "incoming"), fs::directory_iterator()) == 4);
}

TEST_CASE("snapshot: the step the agent assembled loads exactly; a missing or corrupt one is an error",
          "[snapshots]") {
  TempDir dir;
  fs::create_directory(dir / "incoming");
  LocalCommunicator comm;
  std::string buffer;
  REQUIRE(SaveSnapshot(dir.path(), Meta(300), Shard(1), comm, &buffer).ok());
  // What the agent does with the handoff (agent/snapshot_store.cc): step_N/shard_r.bin + manifest.json.
  const Handoff h{300, 0, 1, Crc32(buffer)};
  fs::create_directory(dir / "step_00000300");
  fs::rename(dir / ("incoming/" + HandoffName(h, kHandoffShard)), dir / "step_00000300/shard_0.bin");
  fs::rename(dir / ("incoming/" + HandoffName(h, kHandoffManifest)), dir / "step_00000300/manifest.json");
  auto ck = LoadSnapshot(dir.path(), 300, 6, 2);
  REQUIRE(ck.ok());
  CHECK(ck->meta.step == 300);
  CHECK(ck->meta.sample_position == 96);
  CHECK(ck->master == Shard(1).master);
  CHECK(ck->state[1] == Shard(1).state[1]);
  auto missing = LoadSnapshot(dir.path(), 200, 6, 2);
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.status().message(), Catch::Contains("snapshot of step 200 in " + (dir / "step_00000200")));
  std::string bytes = ReadFile(dir / "step_00000300/shard_0.bin");
  bytes[bytes.size() - 1] ^= 1;
  WriteFile(dir / "step_00000300/shard_0.bin", bytes);
  auto corrupt = LoadSnapshot(dir.path(), 300, 6, 2);
  REQUIRE_FALSE(corrupt.ok());
  CHECK_THAT(corrupt.status().message(), Catch::Contains("crc32 mismatch"));
}

}  // namespace
}  // namespace ds::rt
