// SnapshotDisk (agent/snapshot_disk.h): shards persisted with their record,
// a manifest.json only once the step is whole, found again by a new agent's
// scan, corruption caught on read, pruning.
#include "agent/snapshot_disk.h"


#include <catch2/catch.hpp>
#include <filesystem>

#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"
#include "runtime/checkpoint_format.h"

namespace ds {
namespace {
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;
namespace fs = std::filesystem;

// A shard file as the memory store hands it to Persist.
ShardFile Copy(int64_t step, uint32_t shard, uint32_t world, const std::string& data) {
  static TempDir src("dsagent-disk-test-src");
  const std::string path = src / ("s" + std::to_string(step) + "-" + std::to_string(shard));
  WriteFile(path, data);
  HeldShard held{msg::ShardEntry{step, shard, world, shard, 1, data.size()}, rt::Crc32(data)};
  auto f = OpenShardFile(path, held, "{step " + std::to_string(step) + "}");
  REQUIRE(f.ok());
  return std::move(f).value();
}

TEST_CASE("snapshot disk: a step gets manifest.json only when every shard is on this disk", "[snapshots]") {
  TempDir tmp;
  SnapshotDisk disk(tmp / "ckpt");
  REQUIRE(disk.Persist(Copy(100, 0, 2, "zero")).ok());
  const std::string step = tmp / "ckpt/step_00000100";
  CHECK(ReadFile(step + "/shard_0.bin") == "zero");
  CHECK(ReadFile(step + "/snapshot.json") == "{step 100}");
  CHECK_FALSE(fs::exists(step + "/manifest.json"));
  REQUIRE(disk.Persist(Copy(100, 1, 2, "one")).ok());
  CHECK(ReadFile(step + "/manifest.json") == "{step 100}");
  CHECK(disk.Has(100, 1));
}

TEST_CASE("snapshot disk: a new agent's scan finds what is there and skips what is damaged", "[snapshots]") {
  TempDir tmp;
  {
    SnapshotDisk disk(tmp / "ckpt");
    REQUIRE(disk.Persist(Copy(100, 0, 3, "zero")).ok());
    REQUIRE(disk.Persist(Copy(100, 2, 3, "two-bytes")).ok());
    REQUIRE(disk.Persist(Copy(200, 1, 3, "one")).ok());
  }
  WriteFile(tmp / "ckpt/step_00000100/shard_2.bin", "short");  // size differs from its record
  WriteFile(tmp / "ckpt/step_00000200/shard_1.held", "garbage");
  SnapshotDisk again(tmp / "ckpt");
  auto found = again.Scan();
  REQUIRE(found.size() == 1);
  CHECK(found[0].entry.step == 100);
  CHECK(found[0].entry.shard == 0);
  CHECK(found[0].entry.world == 3);
  CHECK(found[0].entry.tier == 2);
  auto f = again.Open(100, 0);
  REQUIRE(f.ok());
  auto c = ReadVerified(*f);
  REQUIRE(c.ok());
  CHECK(c->data == "zero");
  CHECK(c->manifest == "{step 100}");
  // Same size, other bytes: the crc32 check on read catches it.
  WriteFile(tmp / "ckpt/step_00000100/shard_0.bin", "ZERO");
  auto bad = ReadVerified(again.Open(100, 0).value());
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(), Catch::Contains("corrupt"));
  // Another size: refused when opened.
  WriteFile(tmp / "ckpt/step_00000100/shard_0.bin", "zero!");
  CHECK(again.Open(100, 0).status().code() == Status::Code::kInvalidArgument);
  CHECK(again.Open(300, 0).status().code() == Status::Code::kNotFound);
}

TEST_CASE("snapshot disk: a step directory that is a symlink is skipped, a missing dir is empty", "[snapshots]") {
  TempDir tmp;
  CHECK(SnapshotDisk(tmp / "none").Scan().empty());
  {
    SnapshotDisk elsewhere(tmp / "other");
    REQUIRE(elsewhere.Persist(Copy(5, 0, 1, "planted")).ok());
  }
  fs::create_directories(tmp / "ckpt");
  fs::create_directory_symlink(tmp / "other/step_00000005", tmp / "ckpt/step_00000005");
  SnapshotDisk disk(tmp / "ckpt");
  CHECK(disk.Scan().empty());
}

TEST_CASE("snapshot disk: prune and DropAbove remove whole steps", "[snapshots]") {
  TempDir tmp;
  SnapshotDisk disk(tmp / "ckpt");
  for (int64_t s : {1, 2, 3}) REQUIRE(disk.Persist(Copy(s, 0, 1, "d")).ok());
  CHECK(disk.Prune(2).size() == 1);
  CHECK_FALSE(fs::exists(tmp / "ckpt/step_00000001"));
  CHECK(disk.DropAbove(2).size() == 1);
  CHECK_FALSE(fs::exists(tmp / "ckpt/step_00000003"));
  CHECK(disk.Has(2, 0));
}

}  // namespace
}  // namespace ds
