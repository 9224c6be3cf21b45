// Snapshot handoffs (runtime/checkpoint/snapshot.h) through one rank: the
// names and bytes the agent gets (the save's identity in the name), the
// shard equal to a checkpoint's, and the exact save loaded back from a
// directory the agent assembled; a missing, corrupt or other save is an
// error naming it.
#include <filesystem>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "checkpoint_format/checkpoint_format.h"
#include "runtime/checkpoint/snapshot.h"
#include "tests/runtime/checkpoint/snapshot_shard_fixture.h"
#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"
#include "wire/snapshot_handoff.h"

namespace ds::rt {
namespace {
namespace fs = std::filesystem;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

using testing::Meta;
using testing::Shard;

TEST_CASE("snapshot: the handoff is the shard file and the manifest, named for the agent", "[snapshots]") {
  TempDir dir;
  fs::create_directory(dir / "incoming");
  LocalCommunicator comm;
  std::string buffer;
  REQUIRE(SaveSnapshot(dir.path(), Meta(300), Shard(1), comm, &buffer).ok());
  const std::string shard = EncodeShard(0, Shard(1));
  const Handoff h{300, 0, ckpt::Crc32(shard), msg::SnapshotId{"6b0735a0c0ffee00", 1, 0, "0badf00d", ""}};
  CHECK(HandoffName(h, kHandoffShard) == "00000300.0.1.0.0badf00d.6b0735a0c0ffee00." +
                                            fmt::format("{:08x}", ckpt::Crc32(shard)) + ".shard");
  CHECK(ReadFile(dir / ("incoming/" + HandoffName(h, kHandoffShard))) == shard);
  const std::string manifest = ReadFile(dir / ("incoming/" + HandoffName(h, kHandoffManifest)));
  CHECK_THAT(manifest, Catch::Contains("\"step\": 300"));
  CHECK_THAT(manifest, Catch::Contains(std::to_string(ckpt::Crc32(shard))));
  CHECK_THAT(manifest, Catch::Contains("\"run_id\": \"6b0735a0c0ffee00\""));
  // The buffer is reused by the next one.
  REQUIRE(SaveSnapshot(dir.path(), Meta(350), Shard(2), comm, &buffer).ok());
  CHECK(buffer == EncodeShard(0, Shard(2)));
  // Nothing else, no temporary file left behind.
  CHECK(std::distance(fs::directory_iterator(dir / "incoming"), fs::directory_iterator()) == 4);
}

TEST_CASE("snapshot: a run id is required, it names the handoff", "[snapshots]") {
  TempDir dir;
  fs::create_directory(dir / "incoming");
  LocalCommunicator comm;
  std::string buffer;
  CheckpointMeta m = Meta(300);
  m.run_id = "";
  Status st = SaveSnapshot(dir.path(), m, Shard(1), comm, &buffer);
  CHECK(st.message() == "snapshot: run id '' is not 1 to 32 hex digits");
  CHECK(fs::is_empty(dir / "incoming"));
}

TEST_CASE("snapshot: the save the agent assembled loads exactly; a missing, corrupt or other one is an error",
          "[snapshots]") {
  TempDir dir;
  fs::create_directory(dir / "incoming");
  LocalCommunicator comm;
  std::string buffer;
  REQUIRE(SaveSnapshot(dir.path(), Meta(300), Shard(1), comm, &buffer).ok());
  // What the agent does with the handoff (agent/snapshots/store.cc):
  // step_N.<set>/shard_r.bin + manifest.json, set = the manifest's digest.
  const Handoff h{300, 0, ckpt::Crc32(buffer), msg::SnapshotId{"6b0735a0c0ffee00", 1, 0, "0badf00d", ""}};
  const std::string set = ManifestDigest(ReadFile(dir / ("incoming/" + HandoffName(h, kHandoffManifest))));
  const std::string step = dir / SnapshotStepDirName(300, set);
  fs::create_directory(step);
  fs::rename(dir / ("incoming/" + HandoffName(h, kHandoffShard)), step + "/shard_0.bin");
  fs::rename(dir / ("incoming/" + HandoffName(h, kHandoffManifest)), step + "/manifest.json");
  auto ck = LoadSnapshot(dir.path(), 300, set, 6, 2);
  REQUIRE(ck.ok());
  CHECK(ck->meta.step == 300);
  CHECK(ck->meta.sample_position == 96);
  CHECK(ck->meta.run_id == "6b0735a0c0ffee00");
  CHECK(ck->set == set);
  CHECK(ck->master == Shard(1).master);
  CHECK(ck->state[1] == Shard(1).state[1]);
  auto missing = LoadSnapshot(dir.path(), 200, set, 6, 2);
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.status().message(),
             Catch::Contains("snapshot of step 200 in " + (dir / SnapshotStepDirName(200, set))));
  // Another save under this save's name: its manifest's digest gives it away.
  const std::string other = "0123456789abcdef";
  fs::copy(step, dir / SnapshotStepDirName(300, other));
  auto wrong = LoadSnapshot(dir.path(), 300, other, 6, 2);
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.status().message() == "snapshot of step 300 in " + (dir / SnapshotStepDirName(300, other)) +
                                        " (gathered by the agent): its manifest is of another save (set " + set + ")");
  std::string bytes = ReadFile(step + "/shard_0.bin");
  bytes[bytes.size() - 1] ^= 1;
  WriteFile(step + "/shard_0.bin", bytes);
  auto corrupt = LoadSnapshot(dir.path(), 300, set, 6, 2);
  REQUIRE_FALSE(corrupt.ok());
  CHECK_THAT(corrupt.status().message(), Catch::Contains("crc32 mismatch"));
}

}  // namespace
}  // namespace ds::rt
