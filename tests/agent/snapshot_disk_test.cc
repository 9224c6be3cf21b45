// SnapshotDisk (agent/snapshot_disk.h): shards persisted with their record
// in their save's directory, a manifest.json only once the save is whole,
// found again by a new agent's scan (records of another directory, of an
// older dslaunch or with another save's manifest skipped), corruption
// caught on read, pruning only this run's steps.
#include "agent/snapshot_disk.h"


#include <catch2/catch.hpp>
#include <filesystem>

#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"
#include "common/snapshot_handoff.h"
#include "runtime/checkpoint_format.h"

namespace ds {
namespace {
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;
namespace fs = std::filesystem;

std::string Manifest(int64_t step, const std::string& run) { return "{step " + std::to_string(step) + " " + run + "}"; }
std::string SetOf(int64_t step, const std::string& run = "ab") { return ManifestDigest(Manifest(step, run)); }
std::string Dir(int64_t step, const std::string& run = "ab") { return SnapshotStepDirName(step, SetOf(step, run)); }

// A shard file as the memory store hands it to Persist.
ShardFile Copy(int64_t step, uint32_t shard, uint32_t world, const std::string& data, const std::string& run = "ab") {
  static TempDir src("dsagent-disk-test-src");
  const std::string path = src / ("s" + std::to_string(step) + "-" + std::to_string(shard));
  WriteFile(path, data);
  HeldShard held{msg::ShardEntry{step, shard, msg::SnapshotId{run, world, 1, "c0", SetOf(step, run)}, shard, 1,
                                 data.size()},
                 rt::Crc32(data)};
  auto f = OpenShardFile(path, held, Manifest(step, run));
  REQUIRE(f.ok());
  return std::move(f).value();
}

TEST_CASE("snapshot disk: a step gets manifest.json only when every shard is on this disk", "[snapshots]") {
  TempDir tmp;
  SnapshotDisk disk(tmp / "ckpt");
  REQUIRE(disk.Persist(Copy(100, 0, 2, "zero")).ok());
  const std::string step = tmp / ("ckpt/" + Dir(100));
  CHECK(ReadFile(step + "/shard_0.bin") == "zero");
  CHECK(ReadFile(step + "/snapshot.json") == Manifest(100, "ab"));
  CHECK(ReadFile(step + "/shard_0.held") ==
        "held 2 100 0 2 1 c0 ab " + SetOf(100) + " 0 4 " + std::to_string(rt::Crc32("zero")) + "\n");
  CHECK_FALSE(fs::exists(step + "/manifest.json"));
  REQUIRE(disk.Persist(Copy(100, 1, 2, "one")).ok());
  CHECK(ReadFile(step + "/manifest.json") == Manifest(100, "ab"));
  CHECK(disk.Has(100, SetOf(100), 1));
}

TEST_CASE("snapshot disk: a new agent's scan finds what is there and skips what is damaged", "[snapshots]") {
  TempDir tmp;
  {
    SnapshotDisk disk(tmp / "ckpt");
    REQUIRE(disk.Persist(Copy(100, 0, 3, "zero")).ok());
    REQUIRE(disk.Persist(Copy(100, 2, 3, "two-bytes")).ok());
    REQUIRE(disk.Persist(Copy(200, 1, 3, "one")).ok());
    REQUIRE(disk.Persist(Copy(300, 0, 1, "three")).ok());
    REQUIRE(disk.Persist(Copy(400, 0, 1, "four")).ok());
  }
  const std::string ckpt = tmp / "ckpt";
  WriteFile(ckpt + "/" + Dir(100) + "/shard_2.bin", "short");  // size differs from its record
  WriteFile(ckpt + "/" + Dir(200) + "/shard_1.held", "garbage");
  WriteFile(ckpt + "/" + Dir(300) + "/snapshot.json", "{another save's manifest}");
  // A record moved into another save's directory, and an older dslaunch's.
  fs::copy_file(ckpt + "/" + Dir(400) + "/shard_0.held", ckpt + "/" + Dir(100) + "/shard_1.held");
  WriteFile(ckpt + "/" + Dir(400) + "/shard_0.held", "400 0 1 0 4 123\n");
  SnapshotDisk again(ckpt);
  auto found = again.Scan();
  REQUIRE(found.size() == 1);
  CHECK(found[0].entry.step == 100);
  CHECK(found[0].entry.shard == 0);
  CHECK(found[0].entry.id == msg::SnapshotId{"ab", 3, 1, "c0", SetOf(100)});
  CHECK(found[0].entry.tier == 2);
  auto f = again.Open(100, SetOf(100), 0);
  REQUIRE(f.ok());
  auto c = ReadVerified(*f);
  REQUIRE(c.ok());
  CHECK(c->data == "zero");
  CHECK(c->manifest == Manifest(100, "ab"));
  // Same size, other bytes: the crc32 check on read catches it.
  WriteFile(ckpt + "/" + Dir(100) + "/shard_0.bin", "ZERO");
  auto bad = ReadVerified(again.Open(100, SetOf(100), 0).value());
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(), Catch::Contains("corrupt"));
  // Another size: refused when opened.
  WriteFile(ckpt + "/" + Dir(100) + "/shard_0.bin", "zero!");
  CHECK(again.Open(100, SetOf(100), 0).status().code() == Status::Code::kInvalidArgument);
  CHECK(again.Open(300, SetOf(300), 0).status().code() == Status::Code::kNotFound);
}

TEST_CASE("snapshot disk: a step directory that is a symlink is skipped, a missing dir is empty", "[snapshots]") {
  TempDir tmp;
  CHECK(SnapshotDisk(tmp / "none").Scan().empty());
  {
    SnapshotDisk elsewhere(tmp / "other");
    REQUIRE(elsewhere.Persist(Copy(5, 0, 1, "planted")).ok());
  }
  fs::create_directories(tmp / "ckpt");
  fs::create_directory_symlink(tmp / ("other/" + Dir(5)), tmp / ("ckpt/" + Dir(5)));
  SnapshotDisk disk(tmp / "ckpt");
  CHECK(disk.Scan().empty());
}

TEST_CASE("snapshot disk: prune removes this run's older steps only; DropIf removes whole saves", "[snapshots]") {
  TempDir tmp;
  SnapshotDisk disk(tmp / "ckpt");
  for (int64_t s : {1, 2, 3}) REQUIRE(disk.Persist(Copy(s, 0, 1, "d")).ok());
  REQUIRE(disk.Persist(Copy(0, 0, 1, "earlier run's", "cd")).ok());
  CHECK(disk.Prune(2, "ab").size() == 1);
  CHECK_FALSE(fs::exists(tmp / ("ckpt/" + Dir(1))));
  CHECK(fs::exists(tmp / ("ckpt/" + Dir(0, "cd"))));
  CHECK(disk.DropIf([](int64_t step, const msg::SnapshotId& id) { return id.run == "ab" && step > 2; }).size() == 1);
  CHECK_FALSE(fs::exists(tmp / ("ckpt/" + Dir(3))));
  CHECK(disk.Has(2, SetOf(2), 0));
  CHECK(disk.Has(0, SetOf(0, "cd"), 0));
}

}  // namespace
}  // namespace ds
