// SnapshotWriter (runtime/checkpoint/snapshot_writer.h) through one rank:
// what its helper hands over (seen once Complete returns) is byte for byte
// SaveSnapshot's handoff (so the
// set, the run identity and the agent's checks are unchanged); saves one
// after another reuse the buffer; the agent's spare file for the rank is
// written into (its memory reused); a shard that cannot be written is Complete's
// error naming the file, and nothing is handed over.
#include <sys/stat.h>

#include <filesystem>

#include <catch2/catch.hpp>

#include "checkpoint_format/checkpoint_format.h"
#include "runtime/checkpoint/snapshot.h"
#include "runtime/checkpoint/snapshot_writer.h"
#include "tests/runtime/checkpoint/snapshot_shard_fixture.h"
#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"
#include "wire/snapshot_handoff.h"

namespace ds::rt {
namespace {
namespace fs = std::filesystem;
using testing::ReadFile;
using testing::TempDir;

using testing::Meta;
using testing::Shard;

std::string Name(int64_t step, const ShardState& s, const char* suffix) {
  const Handoff h{step, 0, ckpt::Crc32(EncodeShard(0, s)), msg::SnapshotId{"6b0735a0c0ffee00", 1, 0, "0badf00d", ""}};
  return HandoffName(h, suffix);
}

size_t Entries(const fs::path& dir) {
  return static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

TEST_CASE("snapshot writer: the helper hands over exactly SaveSnapshot's files",
          "[snapshots]") {
  TempDir dir, reference;
  fs::create_directory(dir / "incoming");
  fs::create_directory(reference / "incoming");
  LocalCommunicator comm;
  SnapshotWriter w(dir.path(), comm);
  *w.spare() = Shard(1);
  REQUIRE(w.Begin(Meta(300)).ok());
  CHECK(w.pending());
  REQUIRE(w.Complete().ok());
  CHECK_FALSE(w.pending());
  std::string buffer;
  LocalCommunicator other;  // comm is the helper's
  REQUIRE(SaveSnapshot(reference.path(), Meta(300), Shard(1), other, &buffer).ok());
  for (const char* suffix : {kHandoffShard, kHandoffManifest})
    CHECK(ReadFile(dir / ("incoming/" + Name(300, Shard(1), suffix))) ==
          ReadFile(reference / ("incoming/" + Name(300, Shard(1), suffix))));
  CHECK(Entries(dir / "incoming") == 2);  // no temporary file left behind
  CHECK(w.Complete().ok());  // nothing outstanding: nothing happens
}

TEST_CASE("snapshot writer: saves one after another, each its own step's bytes", "[snapshots]") {
  TempDir dir;
  fs::create_directory(dir / "incoming");
  LocalCommunicator comm;
  SnapshotWriter w(dir.path(), comm);
  for (int i = 1; i <= 3; ++i) {
    *w.spare() = Shard(static_cast<float>(i));
    REQUIRE(w.Begin(Meta(300 + 10 * i)).ok());
    REQUIRE(w.Complete().ok());
  }
  for (int i = 1; i <= 3; ++i)
    CHECK(ReadFile(dir / ("incoming/" + Name(300 + 10 * i, Shard(static_cast<float>(i)), kHandoffShard))) ==
          EncodeShard(0, Shard(static_cast<float>(i))));
  CHECK(Entries(dir / "incoming") == 6);
}

TEST_CASE("snapshot writer: the agent's spare for the rank is written into, not a fresh file", "[snapshots]") {
  TempDir dir;
  fs::create_directory(dir / "incoming");
  testing::WriteFile(dir / "incoming/spare.0", std::string(4096, 'z'));  // a pruned shard, larger
  struct stat spare {};
  REQUIRE(::stat((dir / "incoming/spare.0").c_str(), &spare) == 0);
  LocalCommunicator comm;
  SnapshotWriter w(dir.path(), comm);
  *w.spare() = Shard(1);
  REQUIRE(w.Begin(Meta(300)).ok());
  REQUIRE(w.Complete().ok());
  const std::string shard = dir / ("incoming/" + Name(300, Shard(1), kHandoffShard));
  struct stat written {};
  REQUIRE(::stat(shard.c_str(), &written) == 0);
  CHECK(written.st_ino == spare.st_ino);
  CHECK(ReadFile(shard) == EncodeShard(0, Shard(1)));  // its size is the shard's
  CHECK_FALSE(fs::exists(dir / "incoming/spare.0"));
  CHECK(Entries(dir / "incoming") == 2);
}

TEST_CASE("snapshot writer: a shard that cannot be written is Complete's error, and nothing is handed over",
          "[snapshots]") {
  TempDir dir;
  fs::create_directory(dir / "incoming");
  const fs::path in_the_way = dir / ("incoming/" + Name(300, Shard(1), kHandoffShard));
  fs::create_directory(in_the_way);
  LocalCommunicator comm;
  SnapshotWriter w(dir.path(), comm);
  *w.spare() = Shard(1);
  REQUIRE(w.Begin(Meta(300)).ok());
  const Status st = w.Complete();
  CHECK(st.message() == "snapshot: " + in_the_way.string() + ": File exists");
  CHECK(Entries(dir / "incoming") == 1);  // no manifest: the agent adopts nothing
}

TEST_CASE("snapshot writer: a run id is required; a missing agent directory is named", "[snapshots]") {
  TempDir dir;
  LocalCommunicator comm;
  SnapshotWriter w(dir.path(), comm);
  CheckpointMeta m = Meta(300);
  m.run_id = "";
  CHECK(w.Begin(m).message() == "snapshot: run id '' is not 1 to 32 hex digits");
  CHECK_FALSE(w.pending());
  const Status st = w.Begin(Meta(300));
  CHECK(st.message().rfind("snapshot: ", 0) == 0);
  CHECK_THAT(st.message(), Catch::Contains(dir / "incoming"));
  CHECK_FALSE(w.pending());
}

}  // namespace
}  // namespace ds::rt

namespace ds::rt {
namespace {

// A communicator whose collectives fail, as the helper's does when a peer
// died or the control channel aborted it.
class BrokenComm : public LocalCommunicator {
 public:
  void AllReduceSum(double*, size_t) override { throw CommError("rank 0: allreduce aborted (test)"); }
};

TEST_CASE("snapshot writer: a failed communicator is Complete's Unavailable, and nothing is handed over",
          "[snapshots]") {
  testing::TempDir dir;
  std::filesystem::create_directory(dir / "incoming");
  BrokenComm comm;
  SnapshotWriter w(dir.path(), comm);
  *w.spare() = testing::Shard(1);
  REQUIRE(w.Begin(testing::Meta(300)).ok());
  const Status st = w.Complete();
  CHECK(st.code() == Status::Code::kUnavailable);
  CHECK(st.message() == "snapshot of step 300: rank 0: allreduce aborted (test)");
}

}  // namespace
}  // namespace ds::rt
