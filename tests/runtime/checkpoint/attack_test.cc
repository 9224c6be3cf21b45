// Another local user against dstrain's checkpoints, for real: as root, with
// the other user's moves made by `setpriv` as nobody:nogroup in a 0777
// directory (checkpoint_format/checkpoint_files.h, common/dir.h). A symlink planted at
// a temporary name is never written through; a checkpoint or step directory
// planted as a symlink (to another job's checkpoint of ours) or made by
// another user is refused for save and never loaded, and nothing behind it
// is written, pruned or read. Needs root (to be the victim and to become
// nobody); without it every case passes with a warning.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "runtime/checkpoint/checkpoint.h"
#include "tests/runtime/dstrain_process.h"
#include "tests/test_util/files.h"
#include "tests/test_util/other_user.h"

using ds::Status;
using namespace ds::rt;
using ds::testing::AsNobody;
using ds::testing::kNobody;
using ds::testing::OwnerOf;
using ds::testing::ReadFile;
using ds::testing::SharedDir;
using ds::testing::TreeOf;
using ds::rt::testing::Read;
using ds::rt::testing::Start;
using ds::rt::testing::Wait;
namespace fs = std::filesystem;

namespace {


// "<what> <path> is <found>; expected a directory owned by uid 0".
std::string Refusal(const std::string& what, const std::string& path, const std::string& found) {
  return what + " " + path + " " + found + "; expected a directory owned by uid 0";
}

// A root file nobody may write, beside the shared directory.
std::string MakeVictim(const SharedDir& d) {
  const std::string victim = d.base + "/victim";
  std::ofstream(victim) << "precious";
  return victim;
}

ShardState MakeShard(float value) {
  ShardState s;
  s.segments = {{0, 0, 10, 0}};
  s.master.assign(10, value);
  s.state.assign(2, std::vector<float>(10, 0.25f));
  return s;
}

CheckpointMeta MakeMeta(int64_t step) {
  CheckpointMeta m;
  m.step = step;
  m.scaler.scale = 1;
  m.num_params = 10;
  m.state_slots = 2;
  return m;
}

Status Save(const std::string& dir, int64_t step, int keep = 5, float value = 1.5f) {
  LocalCommunicator comm;
  return SaveCheckpoint(dir, MakeMeta(step), MakeShard(value), comm, keep);
}

}  // namespace

TEST_CASE("attack: nobody's step directory with a symlink at the shard's temporary name",
          "[checkpoint][attack][other_user]") {
  if (!ds::testing::CanActAsNobody()) DS_SKIP(ds::testing::kNeedsOtherUser);
  SharedDir d;
  const std::string victim = MakeVictim(d);
  const std::string step = d.shared + "/step_00000001";
  REQUIRE(AsNobody({"mkdir", step}));
  REQUIRE(AsNobody({"ln", "-s", victim, step + "/shard_0.bin.tmp"}));
  REQUIRE(OwnerOf(step + "/shard_0.bin.tmp") == kNobody);

  Status st = Save(d.shared, 1);
  CHECK(st.code() == Status::Code::kPermissionDenied);
  CHECK(st.message() == Refusal("checkpoint step directory", step, "is owned by uid 65534"));
  CHECK(ReadFile(victim) == "precious");
}

TEST_CASE("attack: a symlink planted by nobody in our world-writable step directory",
          "[checkpoint][attack][other_user]") {
  if (!ds::testing::CanActAsNobody()) DS_SKIP(ds::testing::kNeedsOtherUser);
  SharedDir d;
  const std::string victim = MakeVictim(d);
  const std::string step = d.shared + "/step_00000001";
  fs::create_directory(step);
  ::chmod(step.c_str(), 0777);  // ours, but anyone may add entries (made under umask 0)
  std::string planted;
  SECTION("at the shard's temporary name") { planted = step + "/shard_0.bin.tmp"; }
  SECTION("at the manifest's temporary name") { planted = step + "/manifest.json.tmp"; }
  REQUIRE(AsNobody({"ln", "-s", victim, planted}));
  REQUIRE(OwnerOf(planted) == kNobody);

  Status st = Save(d.shared, 1);
  CHECK(st.code() == Status::Code::kPermissionDenied);
  CHECK(st.message() == planted + " is a symbolic link: refusing to write through it");
  CHECK(ReadFile(victim) == "precious");
  CHECK(fs::is_symlink(planted));  // left for a person to look at
}

TEST_CASE("attack: a checkpoint directory of nobody is refused for save and load",
          "[checkpoint][attack][other_user]") {
  if (!ds::testing::CanActAsNobody()) DS_SKIP(ds::testing::kNeedsOtherUser);
  SharedDir d;
  // A genuine checkpoint of ours, copied into the directory nobody made, as
  // if nobody had crafted it.
  const std::string good = d.base + "/good", theirs = d.shared + "/ckpt";
  REQUIRE(Save(good, 1).ok());
  REQUIRE(AsNobody({"mkdir", theirs}));
  fs::copy(good, theirs, fs::copy_options::recursive);
  const std::string refusal = Refusal("checkpoint directory", theirs, "is owned by uid 65534");

  auto loaded = LoadNewestCheckpoint(theirs, 10, 2);
  CHECK(loaded.status().code() == Status::Code::kPermissionDenied);
  CHECK(loaded.status().message() == refusal);

  Status st = Save(theirs, 2);
  CHECK(st.code() == Status::Code::kPermissionDenied);
  CHECK(st.message() == refusal);
  CHECK_FALSE(fs::exists(theirs + "/step_00000002"));
}

TEST_CASE("attack: a step directory of nobody in our checkpoint directory is never loaded",
          "[checkpoint][attack][other_user]") {
  if (!ds::testing::CanActAsNobody()) DS_SKIP(ds::testing::kNeedsOtherUser);
  SharedDir d;
  REQUIRE(Save(d.shared, 1).ok());  // the shared directory is ours: accepted
  const std::string planted = d.shared + "/step_00000002";
  REQUIRE(AsNobody({"mkdir", planted}));
  for (const char* f : {"shard_0.bin", "manifest.json"})
    fs::copy_file(d.shared + "/step_00000001/" + f, planted + "/" + f);

  CHECK(ListCheckpoints(d.shared) == std::vector<std::string>{d.shared + "/step_00000001"});
  auto loaded = LoadNewestCheckpoint(d.shared, 10, 2);
  REQUIRE(loaded.ok());
  REQUIRE(loaded->has_value());
  CHECK((*loaded)->path == d.shared + "/step_00000001");
  CHECK(OwnerOf(planted) == kNobody);  // skipped, not removed
}

TEST_CASE("attack: the checkpoint directory planted as a symlink to another job's: nothing loaded, written "
          "or pruned there", "[checkpoint][attack][other_user]") {
  if (!ds::testing::CanActAsNobody()) DS_SKIP(ds::testing::kNeedsOtherUser);
  SharedDir d;
  const std::string other = d.base + "/other-job";  // another job of ours, in a private place
  for (int64_t step : {1, 2, 3}) REQUIRE(Save(other, step, 5, 9.0f).ok());
  const auto before = TreeOf(other);
  const std::string planted = d.shared + "/ckpt";
  REQUIRE(AsNobody({"ln", "-s", other, planted}));
  const std::string refusal = Refusal("checkpoint directory", planted, "is a symlink");

  auto loaded = LoadNewestCheckpoint(planted, 10, 2);
  CHECK(loaded.status().code() == Status::Code::kPermissionDenied);
  CHECK(loaded.status().message() == refusal);
  CHECK(ListCheckpoints(planted).empty());

  Status st = Save(planted, 4, /*keep=*/1);  // would prune steps 1-3 if it went through
  CHECK(st.code() == Status::Code::kPermissionDenied);
  CHECK(st.message() == refusal);
  CHECK(TreeOf(other) == before);
  CHECK(OwnerOf(planted) == kNobody);  // left for a person to look at
}

TEST_CASE("attack: a step directory planted as a symlink to another job's step: not loaded, written or pruned",
          "[checkpoint][attack][other_user]") {
  if (!ds::testing::CanActAsNobody()) DS_SKIP(ds::testing::kNeedsOtherUser);
  SharedDir d;
  const std::string other = d.base + "/other-job";
  REQUIRE(Save(other, 7, 5, 9.0f).ok());
  const auto before = TreeOf(other);
  REQUIRE(Save(d.shared, 1).ok());  // our checkpoint directory, one that anyone may add to
  const std::string planted = d.shared + "/step_00000007";
  REQUIRE(AsNobody({"ln", "-s", other + "/step_00000007", planted}));

  auto loaded = LoadNewestCheckpoint(d.shared, 10, 2);
  REQUIRE(loaded.ok());
  REQUIRE(loaded->has_value());
  CHECK((*loaded)->path == d.shared + "/step_00000001");
  CHECK((*loaded)->master == MakeShard(1.5f).master);

  Status st = Save(d.shared, 7);
  CHECK(st.code() == Status::Code::kPermissionDenied);
  CHECK(st.message() == Refusal("checkpoint step directory", planted, "is a symlink"));
  REQUIRE(Save(d.shared, 8, /*keep=*/1).ok());  // prunes step 1, passes the planted one by
  CHECK(ListCheckpoints(d.shared) == std::vector<std::string>{d.shared + "/step_00000008"});
  CHECK(fs::is_symlink(planted));
  CHECK(TreeOf(other) == before);
}

TEST_CASE("attack: dstrain on a checkpoint directory planted as a symlink to another job's exits 1 naming it",
          "[checkpoint][attack][dstrain][other_user]") {
  if (!ds::testing::CanActAsNobody()) DS_SKIP(ds::testing::kNeedsOtherUser);
  SharedDir d;
  const std::string config =
      "DSLAUNCH_TRAINER_CONFIG=trainer:\n"
      "  model: {layers: [20, 16, 5]}\n"
      "  data: {dataset: synthetic, samples: 256, features: 20, classes: 5}\n"
      "  epochs: 1\n"
      "  config: {train_batch_size: 32, optimizer: {type: Adam, params: {lr: 0.01}}}\n";
  const std::string other = d.base + "/other-job";
  auto first = Start({config, "RANK=0", "WORLD_SIZE=1", "DSLAUNCH_CHECKPOINT_DIR=" + other}, {}, d.base + "/out1");
  REQUIRE(Wait(first) == 0);
  REQUIRE(ListCheckpoints(other).size() == 1);
  const auto before = TreeOf(other);
  const std::string planted = d.shared + "/ckpt";
  REQUIRE(AsNobody({"ln", "-s", other, planted}));

  auto p = Start({config, "RANK=0", "WORLD_SIZE=1", "DSLAUNCH_CHECKPOINT_DIR=" + planted}, {}, d.base + "/out2");
  CHECK(Wait(p) == 1);
  const std::string out = Read(p.out_path);
  CHECK_THAT(out, Catch::Contains("dstrain: error: " + Refusal("checkpoint directory", planted, "is a symlink")));
  CHECK_THAT(out, !Catch::Contains("resumed from"));
  CHECK(TreeOf(other) == before);
}
