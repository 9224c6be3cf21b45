// Which checkpoint a starting rank resumes from (runtime/checkpoint/resume.h),
// through one rank: a checkpoint directory that holds another model/optimizer
// config is refused word for word (neither loaded nor saved beside); one of
// this config loads, as does an older dstrain's that did not record its
// config; with snapshots, the chosen save of another config is not loaded
// (a fresh start that says why), and a run id is required. (Ranks that
// resume different checkpoints: trainer_test.cc, with forked ranks.)
#include <filesystem>

#include <catch2/catch.hpp>

#include "runtime/checkpoint/resume.h"
#include "runtime/checkpoint/snapshot.h"
#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"
#include "wire/snapshot_handoff.h"

namespace ds::rt {
namespace {
namespace fs = std::filesystem;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

ShardState Shard() {
  ShardState s;
  s.segments = {{0, 0, 6, 0}};
  s.master = {1, 2, 3, 4, 5, 6};
  s.state.assign(2, std::vector<float>(6, 0.5f));
  return s;
}

CheckpointMeta Meta(int64_t step, const std::string& config) {
  CheckpointMeta m;
  m.step = step;
  m.run_id = "6b0735a0c0ffee00";
  m.config_hash = config;
  m.num_params = 6;
  m.state_slots = 2;
  return m;
}

ResumeRequest Request(const std::string& dir, const std::string& config) {
  ResumeRequest r;
  r.checkpoint_dir = dir;
  r.run_id = "6b0735b0";
  r.config_hash = config;
  r.num_params = 6;
  r.state_slots = 2;
  return r;
}

TEST_CASE("resume: a checkpoint directory holding another config's checkpoint is refused, not loaded or saved beside",
          "[checkpoint]") {
  TempDir dir;
  LocalCommunicator comm;
  REQUIRE(SaveCheckpoint(dir.path(), Meta(10, "0badf00d"), Shard(), comm, 5).ok());
  REQUIRE(SaveCheckpoint(dir.path(), Meta(20, "c0ffee00"), Shard(), comm, 5).ok());
  auto refused = FindResume(Request(dir.path(), "c0ffee00"));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message() ==
        "checkpoint directory " + dir.path() + " holds step_00000010, saved with another model/optimizer config "
        "(hash 0badf00d; this run's is c0ffee00): refusing to resume from it or to save beside it; use another "
        "checkpoint.dir, or move " + (dir / "step_00000010") + " away");
  fs::remove_all(dir / "step_00000010");
  auto ours = FindResume(Request(dir.path(), "c0ffee00"));
  REQUIRE(ours.ok());
  REQUIRE(ours->checkpoint);
  CHECK(ours->checkpoint->meta.step == 20);
  CHECK(ours->checkpoint->meta.run_id == "6b0735a0c0ffee00");
  CHECK(ours->checkpoint->set == ManifestDigest(ReadFile(dir / "step_00000020/manifest.json")));
  CHECK(ours->fresh_because == "");
  // No directory, or an empty one: a fresh start with nothing to say.
  auto none = FindResume(Request(dir / "none", "c0ffee00"));
  REQUIRE(none.ok());
  CHECK_FALSE(none->checkpoint);
  CHECK(none->fresh_because == "");
}

TEST_CASE("resume: an older dstrain's checkpoint (format 1, config not recorded) loads when its shape matches",
          "[checkpoint]") {
  TempDir dir;
  LocalCommunicator comm;
  REQUIRE(SaveCheckpoint(dir.path(), Meta(30, "0badf00d"), Shard(), comm, 5).ok());
  const std::string path = dir / "step_00000030/manifest.json";
  std::string manifest = ReadFile(path);
  manifest.replace(manifest.find("\"format\": 2"), 11, "\"format\": 1");
  manifest.erase(manifest.find("  \"run_id\""), manifest.find("  \"world_size\"") - manifest.find("  \"run_id\""));
  fs::remove(path);
  WriteFile(path, manifest);
  auto old = FindResume(Request(dir.path(), "c0ffee00"));
  REQUIRE(old.ok());
  REQUIRE(old->checkpoint);
  CHECK(old->checkpoint->meta.step == 30);
  CHECK(old->checkpoint->meta.config_hash == "");
}

TEST_CASE("resume: with snapshots, the chosen save of another config is not loaded, and a run id is required",
          "[checkpoint][snapshots]") {
  TempDir dir;
  fs::create_directory(dir / "incoming");
  LocalCommunicator comm;
  std::string buffer;
  REQUIRE(SaveSnapshot(dir.path(), Meta(40, "0badf00d"), Shard(), comm, &buffer).ok());
  // Assembled as the agent does (agent/snapshots/store.cc).
  std::string manifest_name, shard_name;
  for (const auto& e : fs::directory_iterator(dir / "incoming"))
    (e.path().extension() == ".manifest" ? manifest_name : shard_name) = e.path().string();
  const std::string set = ManifestDigest(ReadFile(manifest_name));
  const std::string step = dir / SnapshotStepDirName(40, set);
  fs::create_directory(step);
  fs::rename(shard_name, step + "/shard_0.bin");
  fs::rename(manifest_name, step + "/manifest.json");

  ResumeRequest r = Request("", "c0ffee00");
  r.snapshot_dir = dir.path();
  r.resume_step = 40;
  r.resume_set = set;
  auto other = FindResume(r);
  REQUIRE(other.ok());
  CHECK_FALSE(other->checkpoint);
  CHECK(other->fresh_because ==
        "not resuming step 40 of run 6b0735a0c0ffee00: it was saved with another model/optimizer config (hash "
        "0badf00d; this run's is c0ffee00); starting fresh");
  r.config_hash = "0badf00d";
  auto same = FindResume(r);
  REQUIRE(same.ok());
  REQUIRE(same->checkpoint);
  CHECK(same->checkpoint->meta.step == 40);
  CHECK(same->checkpoint->master == Shard().master);
  auto shape = r;  // a model of another shape and config: still a fresh start, not a load error
  shape.config_hash = "c0ffee00";
  shape.num_params = 8;
  auto other_shape = FindResume(shape);
  REQUIRE(other_shape.ok());
  CHECK_FALSE(other_shape->checkpoint);
  CHECK_THAT(other_shape->fresh_because, Catch::StartsWith("not resuming step 40 of run 6b0735a0c0ffee00"));
  r.resume_set = "0123456789abcdef";  // a save the agent did not gather
  CHECK_FALSE(FindResume(r).ok());
  r.run_id = "";
  CHECK(FindResume(r).status().message() ==
        "DSLAUNCH_SNAPSHOT_DIR is set but DSLAUNCH_RUN_ID is '', not a run id (dslaunch sets both)");
}

TEST_CASE("resume: one rank agrees with itself", "[checkpoint]") {
  LocalCommunicator comm;
  std::optional<LoadedCheckpoint> none;
  CHECK(AgreeOnResume(&none, comm).ok());
  CHECK(AgreeOnResume(nullptr, comm).message() == "rank 0 could not load its checkpoint (its output says why)");
}

}  // namespace
}  // namespace ds::rt
