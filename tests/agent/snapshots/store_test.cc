// SnapshotStore (agent/snapshots/store.h): a worker's handoff adopted into
// its save's directory, which loads like a checkpoint; puts checked against
// their size and their save's manifest; reads; pruning only this run's
// steps, with this node's pruned shard files kept as spares for its
// workers; dropping saves.
#include "agent/snapshots/store.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "checkpoint_format/checkpoint_format.h"
#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"
#include "wire/snapshot_handoff.h"

namespace ds {
namespace {

// A coordinator's plan that settles every step and protects none: `keep` alone decides.
const msg::SnapshotPlan kSettled{INT64_MAX, {}, {}};
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

ShardCopy Copy(int64_t step, uint32_t shard, uint32_t world, uint32_t origin, const std::string& data,
               const std::string& run = "ab") {
  ShardCopy c;
  c.manifest = "{\"step\": " + std::to_string(step) + ", \"run\": \"" + run + "\"}";
  c.held.entry = msg::ShardEntry{step, shard, msg::SnapshotId{run, world, 1, "c0", ManifestDigest(c.manifest)},
                                 origin, 1, data.size()};
  c.held.crc32 = ckpt::Crc32(data);
  c.data = data;
  return c;
}
Handoff H(int64_t step, uint32_t rank, uint32_t world, uint32_t crc32) {
  return Handoff{step, rank, crc32, msg::SnapshotId{"ab", world, 1, "c0", ""}};
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

TEST_CASE("snapshot store: a worker's handoff becomes a held shard in its save's directory", "[snapshots]") {
  TempDir parent;
  auto store = std::move(SnapshotStore::Create(parent.path())).value();
  const std::string in = store->incoming_dir() + "/";
  const Handoff h = H(50, 1, 2, ckpt::Crc32("shard-one-bytes"));
  const std::string set = ManifestDigest("{manifest}");
  WriteFile(in + HandoffName(h, kHandoffShard), "shard-one-bytes");
  WriteFile(in + HandoffName(h, kHandoffManifest), "{manifest}");
  auto held = store->Adopt(HandoffName(h, kHandoffManifest), 7);
  REQUIRE(held.ok());
  CHECK(held->entry.step == 50);
  CHECK(held->entry.shard == 1);
  CHECK(held->entry.id == msg::SnapshotId{"ab", 2, 1, "c0", set});
  CHECK(held->entry.origin == 7);
  CHECK(held->entry.bytes == 15);
  CHECK(held->crc32 == ckpt::Crc32("shard-one-bytes"));
  CHECK(ReadFile(store->dir() + "/step_00000050." + set + "/shard_1.bin") == "shard-one-bytes");
  CHECK(ReadFile(store->dir() + "/step_00000050." + set + "/manifest.json") == "{manifest}");
  CHECK_FALSE(std::filesystem::exists(in + HandoffName(h, kHandoffShard)));
  CHECK(store->Has(50, set, 1));
  CHECK_FALSE(store->Has(50, set, 0));
  CHECK_FALSE(store->Has(50, ManifestDigest("{another save}"), 1));
  auto file = store->Open(50, set, 1);
  REQUIRE(file.ok());
  auto back = ReadVerified(*file);
  REQUIRE(back.ok());
  CHECK(back->data == "shard-one-bytes");
  CHECK(back->manifest == "{manifest}");
  // A manifest without its shard is refused, not held.
  const Handoff lone = H(60, 0, 2, 0);
  WriteFile(in + HandoffName(lone, kHandoffManifest), "{m}");
  auto refused = store->Adopt(HandoffName(lone, kHandoffManifest), 7);
  CHECK(refused.status().code() == Status::Code::kInvalidArgument);
  CHECK_THAT(refused.status().message(), Catch::Contains("no shard file"));
  // Adopted already: NotFound, which the keeper passes over quietly.
  CHECK(store->Adopt(HandoffName(h, kHandoffManifest), 7).status().code() == Status::Code::kNotFound);
  CHECK(store->Open(60, ManifestDigest("{m}"), 0).status().code() == Status::Code::kNotFound);
}

TEST_CASE("snapshot store: two saves of one step never share a directory", "[snapshots]") {
  TempDir parent;
  auto store = std::move(SnapshotStore::Create(parent.path())).value();
  ShardCopy a = Copy(10, 0, 2, 0, "world-2-bytes", "aa"), b = Copy(10, 0, 1, 0, "world-1", "bb");
  REQUIRE(store->Put(a).ok());
  REQUIRE(store->Put(b).ok());
  CHECK(ReadVerified(store->Open(10, a.held.entry.id.set, 0).value())->data == "world-2-bytes");
  CHECK(ReadVerified(store->Open(10, b.held.entry.id.set, 0).value())->data == "world-1");
  CHECK(store->Entries().size() == 2);
}

TEST_CASE("snapshot store: a put of another size, or with another save's manifest, is refused", "[snapshots]") {
  TempDir parent;
  auto store = std::move(SnapshotStore::Create(parent.path())).value();
  ShardCopy c = Copy(10, 0, 1, 2, "abc");
  c.data = "abcd";
  Status st = store->Put(c);
  CHECK_FALSE(st.ok());
  CHECK_THAT(st.message(), Catch::Contains("shard 0 of step 10: 4 bytes, expected 3"));
  ShardCopy other = Copy(10, 0, 1, 2, "abc");
  other.manifest = "{\"step\": 10, \"another\": \"save\"}";
  CHECK(store->Put(other).message() ==
        "shard 0 of step 10: not the manifest of set " + other.held.entry.id.set);
  CHECK(store->Entries().empty());
  REQUIRE(store->Put(Copy(10, 0, 1, 2, "abc")).ok());
  CHECK(store->Has(10, Copy(10, 0, 1, 2, "abc").held.entry.id.set, 0));
}

TEST_CASE("snapshot store: prune keeps this run's newest steps and no other run's are pruned; DropIf drops saves",
          "[snapshots]") {
  TempDir parent;
  auto store = std::move(SnapshotStore::Create(parent.path())).value();
  for (int64_t step : {10, 20, 30, 40})
    for (uint32_t shard : {0u, 1u}) REQUIRE(store->Put(Copy(step, shard, 2, shard, "x" + std::to_string(step))).ok());
  const ShardCopy earlier = Copy(5, 0, 1, 0, "old", "cc");
  REQUIRE(store->Put(earlier).ok());
  auto gone = store->Prune(2, "ab", kSettled);
  CHECK(gone.size() == 4);
  CHECK_FALSE(store->Has(10, Copy(10, 0, 2, 0, "").held.entry.id.set, 0));
  CHECK(store->Has(30, Copy(30, 0, 2, 0, "").held.entry.id.set, 0));
  CHECK(store->Has(5, earlier.held.entry.id.set, 0));  // run cc's: not this run's to prune
  CHECK_FALSE(std::filesystem::exists(store->dir() + "/" + SnapshotStepDirName(10, Copy(10, 0, 2, 0, "").held.entry.id.set)));
  auto dropped = store->DropIf([](int64_t step, const msg::SnapshotId& id) { return id.run == "ab" && step > 30; });
  REQUIRE(dropped.size() == 2);
  CHECK(dropped[0].step == 40);
  CHECK(store->Entries().size() == 3);
  CHECK(store->DropIf([](int64_t, const msg::SnapshotId&) { return true; }).size() == 3);
  CHECK(store->Entries().empty());
}

TEST_CASE("snapshot store: prune never drops what the plan protects, and keeps saves still being handed over",
          "[snapshots]") {
  TempDir parent;
  auto store = std::move(SnapshotStore::Create(parent.path())).value();
  auto set = [](int64_t step) { return Copy(step, 0, 2, 0, "").held.entry.id.set; };
  for (int64_t step = 10; step <= 100; step += 10) REQUIRE(store->Put(Copy(step, 0, 2, 0, "x")).ok());
  // Complete up to 50: of 10..50 the newest 2 (40, 50) and the protected 10 (the recovery
  // point) stay; 60..100 are still being handed over: the newest 4 of them stay.
  const msg::SnapshotPlan plan{50, {{10, set(10)}, {70, set(70)}}, {70, set(70)}};
  store->Prune(2, "ab", plan);
  std::vector<int64_t> held;
  for (const HeldShard& h : store->Entries()) held.push_back(h.entry.step);
  CHECK(held == std::vector<int64_t>{10, 40, 50, 70, 80, 90, 100});
  // Before the coordinator said anything, nothing is settled: only the in-flight bound applies.
  auto fresh = std::move(SnapshotStore::Create(parent.path())).value();
  for (int64_t step : {1, 2, 3, 4, 5}) REQUIRE(fresh->Put(Copy(step, 0, 2, 0, "y")).ok());
  CHECK(fresh->Prune(1, "ab", msg::SnapshotPlan{}).size() == 1);
}

TEST_CASE("snapshot store: a pruned shard this node wrote becomes its rank's spare, once released", "[snapshots]") {
  TempDir parent;
  auto store = std::move(SnapshotStore::Create(parent.path())).value();
  for (int64_t step : {10, 20, 30})
    for (uint32_t shard : {0u, 1u}) REQUIRE(store->Put(Copy(step, shard, 2, shard, "x" + std::to_string(step))).ok());
  const std::string step10 = store->dir() + "/" + SnapshotStepDirName(10, Copy(10, 0, 2, 0, "").held.entry.id.set);
  struct stat before {};
  REQUIRE(::stat((step10 + "/shard_1.bin").c_str(), &before) == 0);
  CHECK(store->Prune(2, "ab", kSettled, 1).size() == 2);  // node 1 wrote shard 1; shard 0 is another node's
  const std::string spare = store->incoming_dir() + "/spare.1";
  CHECK_FALSE(std::filesystem::exists(spare));  // not before its readers are done
  store->ReleaseSpares();
  struct stat after {};
  REQUIRE(::stat(spare.c_str(), &after) == 0);
  CHECK(after.st_ino == before.st_ino);  // the same memory, not a copy
  CHECK(ReadFile(spare) == "x10");
  CHECK_FALSE(std::filesystem::exists(store->incoming_dir() + "/spare.0"));
  CHECK_FALSE(std::filesystem::exists(step10));
}

}  // namespace
}  // namespace ds
