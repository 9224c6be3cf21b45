// SnapshotDisk (agent/snapshots/disk.h): shards persisted with their record
// in their save's directory, a manifest.json only once the save is whole,
// found again by a new agent's scan (records of another directory, of an
// older dslaunch or with another save's manifest skipped), corruption
// caught on read, pruning only this run's steps; and another local user
// (nobody, through setpriv, as root only) planting the node's directory or a
// step directory as a symlink to another job's: nothing scanned, written,
// read or pruned there.
#include "agent/snapshots/disk.h"


#include <catch2/catch.hpp>
#include <filesystem>

#include "checkpoint_format/checkpoint_format.h"
#include "tests/test_util/files.h"
#include "tests/test_util/other_user.h"
#include "tests/test_util/temp_dir.h"
#include "wire/snapshot_handoff.h"

namespace ds {
namespace {

// A coordinator's plan that settles every step and protects none: `keep` alone decides.
const msg::SnapshotPlan kSettled{INT64_MAX, {}, {}};
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;
namespace fs = std::filesystem;


std::string Manifest(int64_t step, const std::string& run) { return "{step " + std::to_string(step) + " " + run + "}"; }
std::string SetOf(int64_t step, const std::string& run = "ab") { return ManifestDigest(Manifest(step, run)); }
std::string SaveDir(int64_t step, const std::string& run = "ab") { return SnapshotStepDirName(step, SetOf(step, run)); }

// A shard file as the memory store hands it to Persist.
ShardFile Copy(int64_t step, uint32_t shard, uint32_t world, const std::string& data, const std::string& run = "ab") {
  static TempDir src("dsagent-disk-test-src");
  const std::string name = "s" + std::to_string(step) + "-" + std::to_string(shard);
  WriteFile(src / name, data);
  HeldShard held{msg::ShardEntry{step, shard, msg::SnapshotId{run, world, 1, "c0", SetOf(step, run)}, shard, 1,
                                 data.size()},
                 ckpt::Crc32(data)};
  auto f = OpenShardFile(Dir::Open(src.path(), "test directory").value(), name, held, Manifest(step, run));
  REQUIRE(f.ok());
  return std::move(f).value();
}

TEST_CASE("snapshot disk: a step gets manifest.json only when every shard is on this disk", "[snapshots]") {
  TempDir tmp;
  SnapshotDisk disk(tmp / "ckpt");
  REQUIRE(disk.Persist(Copy(100, 0, 2, "zero")).ok());
  const std::string step = tmp / ("ckpt/" + SaveDir(100));
  CHECK(ReadFile(step + "/shard_0.bin") == "zero");
  CHECK(ReadFile(step + "/snapshot.json") == Manifest(100, "ab"));
  CHECK(ReadFile(step + "/shard_0.held") ==
        "held 2 100 0 2 1 c0 ab " + SetOf(100) + " 0 4 " + std::to_string(ckpt::Crc32("zero")) + "\n");
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
  WriteFile(ckpt + "/" + SaveDir(100) + "/shard_2.bin", "short");  // size differs from its record
  WriteFile(ckpt + "/" + SaveDir(200) + "/shard_1.held", "garbage");
  WriteFile(ckpt + "/" + SaveDir(300) + "/snapshot.json", "{another save's manifest}");
  // A record moved into another save's directory, and an older dslaunch's.
  fs::copy_file(ckpt + "/" + SaveDir(400) + "/shard_0.held", ckpt + "/" + SaveDir(100) + "/shard_1.held");
  WriteFile(ckpt + "/" + SaveDir(400) + "/shard_0.held", "400 0 1 0 4 123\n");
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
  WriteFile(ckpt + "/" + SaveDir(100) + "/shard_0.bin", "ZERO");
  auto bad = ReadVerified(again.Open(100, SetOf(100), 0).value());
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(), Catch::Contains("corrupt"));
  // Another size: refused when opened.
  WriteFile(ckpt + "/" + SaveDir(100) + "/shard_0.bin", "zero!");
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
  fs::create_directory_symlink(tmp / ("other/" + SaveDir(5)), tmp / ("ckpt/" + SaveDir(5)));
  SnapshotDisk disk(tmp / "ckpt");
  CHECK(disk.Scan().empty());
}

TEST_CASE("snapshot disk: prune removes this run's older steps only; DropIf removes whole saves", "[snapshots]") {
  TempDir tmp;
  SnapshotDisk disk(tmp / "ckpt");
  for (int64_t s : {1, 2, 3}) REQUIRE(disk.Persist(Copy(s, 0, 1, "d")).ok());
  REQUIRE(disk.Persist(Copy(0, 0, 1, "earlier run's", "cd")).ok());
  CHECK(disk.Prune(2, "ab", kSettled).size() == 1);
  CHECK_FALSE(fs::exists(tmp / ("ckpt/" + SaveDir(1))));
  CHECK(fs::exists(tmp / ("ckpt/" + SaveDir(0, "cd"))));
  CHECK(disk.DropIf([](int64_t step, const msg::SnapshotId& id) { return id.run == "ab" && step > 2; }).size() == 1);
  CHECK_FALSE(fs::exists(tmp / ("ckpt/" + SaveDir(3))));
  CHECK(disk.Has(2, SetOf(2), 0));
  CHECK(disk.Has(0, SetOf(0, "cd"), 0));
}

TEST_CASE("snapshot disk attack: the node directory planted by nobody as a symlink: nothing scanned, written "
          "or pruned there", "[snapshots][attack][other_user]") {
  if (!testing::CanActAsNobody()) DS_SKIP(testing::kNeedsOtherUser);
  testing::SharedDir d;
  std::string target;
  SECTION("to another job's node directory of ours") {
    target = d.base + "/other-job";
    SnapshotDisk other(target);
    for (int64_t s : {1, 2, 3}) REQUIRE(other.Persist(Copy(s, 0, 1, "theirs")).ok());
  }
  SECTION("to a directory of the attacker's") {
    target = d.shared + "/attackers";
    REQUIRE(testing::AsNobody({"mkdir", "-m", "0777", target}));
  }
  const auto before = testing::TreeOf(target);
  const std::string planted = d.shared + "/node0";
  REQUIRE(testing::AsNobody({"ln", "-s", target, planted}));

  SnapshotDisk disk(planted);
  CHECK(disk.Scan().empty());  // another job's shards are not reported as this node's
  Status st = disk.Persist(Copy(10, 0, 1, "ours"));
  CHECK(st.code() == Status::Code::kPermissionDenied);
  CHECK(st.message() == "checkpoint directory " + planted + " is a symlink; expected a directory owned by uid 0");
  CHECK(disk.Prune(1, "ab", kSettled).empty());
  CHECK(disk.DropIf([](int64_t step, const msg::SnapshotId&) { return step > 0; }).empty());
  CHECK(disk.Open(1, SetOf(1), 0).status().code() == Status::Code::kNotFound);
  CHECK(testing::TreeOf(target) == before);
  CHECK(testing::OwnerOf(planted) == testing::kNobody);  // left for a person to look at
}

TEST_CASE("snapshot disk attack: a step directory swapped by nobody for a symlink to another job's step is "
          "neither read nor written", "[snapshots][attack][other_user]") {
  if (!testing::CanActAsNobody()) DS_SKIP(testing::kNeedsOtherUser);
  testing::SharedDir d;
  const std::string other = d.base + "/other-job";
  REQUIRE(SnapshotDisk(other).Persist(Copy(5, 0, 2, "THEM")).ok());  // the same size as ours
  const auto before = testing::TreeOf(other);
  const std::string node = d.shared + "/node0";
  fs::create_directory(node);
  fs::permissions(node, fs::perms::all);  // ours, but anyone may rename its entries (made under umask 0)
  SnapshotDisk disk(node);
  REQUIRE(disk.Persist(Copy(5, 0, 2, "ours")).ok());
  const std::string step = node + "/" + SaveDir(5);
  REQUIRE(testing::AsNobody({"mv", step, node + "/moved"}));
  REQUIRE(testing::AsNobody({"ln", "-s", other + "/" + SaveDir(5), step}));
  const std::string refusal =
      "checkpoint step directory " + step + " is a symlink; expected a directory owned by uid 0";

  auto opened = disk.Open(5, SetOf(5), 0);  // what a peer's fetch or a restart reads
  CHECK(opened.status().code() == Status::Code::kPermissionDenied);
  CHECK(opened.status().message() == refusal);
  Status st = disk.Persist(Copy(5, 1, 2, "more"));
  CHECK(st.code() == Status::Code::kPermissionDenied);
  CHECK(st.message() == refusal);
  REQUIRE(disk.Persist(Copy(6, 0, 1, "six")).ok());
  CHECK(disk.Prune(1, "ab", kSettled).size() == 1);  // step 5 goes: the symlink is removed, not followed
  CHECK_FALSE(fs::exists(fs::symlink_status(step)));
  CHECK(testing::TreeOf(other) == before);
  CHECK(ReadFile(node + "/moved/shard_0.bin") == "ours");
}

}  // namespace
}  // namespace ds
