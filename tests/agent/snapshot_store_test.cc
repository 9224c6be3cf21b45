// SnapshotStore (agent/snapshot_store.h): a worker's handoff adopted into a
// step directory that loads like a checkpoint, puts checked against their
// crc32, reads, pruning and dropping an abandoned timeline.
#include "agent/snapshot_store.h"

#include <sys/stat.h>

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

ShardCopy Copy(int64_t step, uint32_t shard, uint32_t world, uint32_t origin, const std::string& data) {
  ShardCopy c;
  c.held.entry = msg::ShardEntry{step, shard, world, origin, 1, data.size()};
  c.held.crc32 = rt::Crc32(data);
  c.manifest = "{\"step\": " + std::to_string(step) + "}";
  c.data = data;
  return c;
}

TEST_CASE("snapshot store: a private directory, removed with the store", "[snapshots]") {
  TempDir parent;
  std::string dir;
  {
    auto store = SnapshotStore::Create(parent.path());
    REQUIRE(store.ok());
    dir = (*store)->dir();
    struct stat st {};
    REQUIRE(::stat(dir.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
    CHECK(std::filesystem::is_directory((*store)->incoming_dir()));
  }
  CHECK_FALSE(std::filesystem::exists(dir));
}

TEST_CASE("snapshot store: a worker's handoff becomes a held shard in its step directory", "[snapshots]") {
  TempDir parent;
  auto store = std::move(SnapshotStore::Create(parent.path())).value();
  const std::string in = store->incoming_dir() + "/";
  const Handoff h{50, 1, 2, rt::Crc32("shard-one-bytes")};
  WriteFile(in + HandoffName(h, kHandoffShard), "shard-one-bytes");
  WriteFile(in + HandoffName(h, kHandoffManifest), "{manifest}");
  auto held = store->Adopt(HandoffName(h, kHandoffManifest), 7);
  REQUIRE(held.ok());
  CHECK(held->entry.step == 50);
  CHECK(held->entry.shard == 1);
  CHECK(held->entry.world == 2);
  CHECK(held->entry.origin == 7);
  CHECK(held->entry.bytes == 15);
  CHECK(held->crc32 == rt::Crc32("shard-one-bytes"));
  CHECK(ReadFile(store->dir() + "/step_00000050/shard_1.bin") == "shard-one-bytes");
  CHECK(ReadFile(store->dir() + "/step_00000050/manifest.json") == "{manifest}");
  CHECK_FALSE(std::filesystem::exists(in + HandoffName(h, kHandoffShard)));
  CHECK(store->Has(50, 1));
  CHECK_FALSE(store->Has(50, 0));
  auto file = store->Open(50, 1);
  REQUIRE(file.ok());
  auto back = ReadVerified(*file);
  REQUIRE(back.ok());
  CHECK(back->data == "shard-one-bytes");
  CHECK(back->manifest == "{manifest}");
  // A manifest without its shard is refused, not held.
  const Handoff lone{60, 0, 2, 0};
  WriteFile(in + HandoffName(lone, kHandoffManifest), "{m}");
  auto refused = store->Adopt(HandoffName(lone, kHandoffManifest), 7);
  CHECK(refused.status().code() == Status::Code::kInvalidArgument);
  CHECK_THAT(refused.status().message(), Catch::Contains("no shard file"));
  // Adopted already: NotFound, which the keeper passes over quietly.
  CHECK(store->Adopt(HandoffName(h, kHandoffManifest), 7).status().code() == Status::Code::kNotFound);
  CHECK_FALSE(store->Has(60, 0));
  CHECK(store->Open(60, 0).status().code() == Status::Code::kNotFound);
}

TEST_CASE("snapshot store: a put of another size than its entry is refused", "[snapshots]") {
  TempDir parent;
  auto store = std::move(SnapshotStore::Create(parent.path())).value();
  ShardCopy c = Copy(10, 0, 1, 2, "abc");
  c.data = "abcd";
  Status st = store->Put(c);
  CHECK_FALSE(st.ok());
  CHECK_THAT(st.message(), Catch::Contains("shard 0 of step 10: 4 bytes, expected 3"));
  CHECK_FALSE(store->Has(10, 0));
  REQUIRE(store->Put(Copy(10, 0, 1, 2, "abc")).ok());
  CHECK(store->Has(10, 0));
}

TEST_CASE("snapshot store: prune keeps the newest steps, DropAbove abandons newer ones", "[snapshots]") {
  TempDir parent;
  auto store = std::move(SnapshotStore::Create(parent.path())).value();
  for (int64_t step : {10, 20, 30, 40})
    for (uint32_t shard : {0u, 1u}) REQUIRE(store->Put(Copy(step, shard, 2, shard, "x" + std::to_string(step))).ok());
  auto gone = store->Prune(2);
  CHECK(gone.size() == 4);
  CHECK_FALSE(store->Has(10, 0));
  CHECK_FALSE(store->Has(20, 1));
  CHECK(store->Has(30, 0));
  CHECK_FALSE(std::filesystem::exists(store->dir() + "/step_00000010"));
  auto dropped = store->DropAbove(30);
  REQUIRE(dropped.size() == 2);
  CHECK(dropped[0].step == 40);
  CHECK(store->Has(30, 1));
  CHECK_FALSE(store->Has(40, 0));
  CHECK(store->Entries().size() == 2);
  CHECK(store->DropAbove(-1).size() == 2);
  CHECK(store->Entries().empty());
}

}  // namespace
}  // namespace ds
