// The names a worker and its agent share (wire/snapshot_handoff.h): the
// handoff names carry step, rank, the save's identity and crc32 and parse
// back exactly; a save's directory is named by its step and manifest
// digest; identities that could not name a file are refused.
#include "wire/snapshot_handoff.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

Handoff H(int64_t step, uint32_t rank, uint32_t world) {
  Handoff h;
  h.step = step;
  h.rank = rank;
  h.crc32 = 0xdeadbeef;
  h.id = msg::SnapshotId{"6b0735a0c0ffee00", world, 2, "0badf00d", ""};
  return h;
}

TEST_CASE("snapshot handoff: names carry step, rank, identity and crc32, and parse back exactly", "[snapshots]") {
  const Handoff h = H(400, 1, 3);
  CHECK(HandoffName(h, kHandoffManifest) == "00000400.1.3.2.0badf00d.6b0735a0c0ffee00.deadbeef.manifest");
  CHECK(HandoffName(h, kHandoffShard) == "00000400.1.3.2.0badf00d.6b0735a0c0ffee00.deadbeef.shard");
  auto p = ParseHandoffManifest("00000400.1.3.2.0badf00d.6b0735a0c0ffee00.deadbeef.manifest");
  REQUIRE(p);
  CHECK(p->step == 400);
  CHECK(p->rank == 1);
  CHECK(p->crc32 == 0xdeadbeef);
  CHECK(p->id == h.id);
  CHECK(ParseHandoffManifest(HandoffName(H(123456789, 0, 1), kHandoffManifest))->step == 123456789);
}

TEST_CASE("snapshot handoff: anything else is not a handoff", "[snapshots]") {
  for (const char* bad : {"00000400.1.3.2.0badf00d.6b0735a0.deadbeef.shard",       // the shard, not the manifest
                          "00000400.3.3.2.0badf00d.6b0735a0.deadbeef.manifest",    // rank >= world
                          "00000400.1.0.2.0badf00d.6b0735a0.deadbeef.manifest",    // world 0
                          "00000400.1.3.4.0badf00d.6b0735a0.deadbeef.manifest",    // stage 4
                          "00000400.1.3.2.0BADF00D.6b0735a0.deadbeef.manifest",    // upper case
                          "00000400.1.3.2.0badf00d..deadbeef.manifest",            // no run
                          "00000400.1.3.2.0badf00d.6b0735a0.deadbeef.manifest.tmp", "x.1.3.2.0badf00d.6b0735a0.deadbeef.manifest",
                          "00000400.1.3.deadbeef.manifest",                        // an older dstrain's
                          "00000400.1.3.2.0badf00d.6b0735a0.deadbee.manifest", "00000400.1.99999999.2.0badf00d.6b0735a0.deadbeef.manifest",
                          "00000400.-1.3.2.0badf00d.6b0735a0.deadbeef.manifest", ".manifest", ""})
    CHECK_FALSE(ParseHandoffManifest(bad));
}

TEST_CASE("snapshot handoff: a save is named by its manifest's digest", "[snapshots]") {
  const std::string set = ManifestDigest("{\"step\": 10}");
  CHECK(set.size() == 16);
  CHECK(IsSetDigest(set));
  CHECK(set == ManifestDigest("{\"step\": 10}"));
  CHECK(set != ManifestDigest("{\"step\": 10} "));
  CHECK(SnapshotStepDirName(10, set) == "step_00000010." + set);
  CHECK(SnapshotIdProblem(msg::SnapshotId{"ab", 2, 1, "0badf00d", set}) == "");
  CHECK(SnapshotIdProblem(msg::SnapshotId{"ab", 2, 1, "0badf00d", ""}) ==
        "set '' is not a manifest digest (16 hex digits)");
  CHECK(SnapshotIdProblem(msg::SnapshotId{"ab", 2, 1, "0badf00d", ""}, /*set_required=*/false) == "");
  CHECK(SnapshotIdProblem(msg::SnapshotId{"../ab", 2, 1, "0badf00d", set}) ==
        "run id '../ab' is not 1 to 32 hex digits");
  CHECK(SnapshotIdProblem(msg::SnapshotId{"ab", 2, 1, "", set}) == "config hash '' is not 1 to 16 hex digits");
  CHECK(SnapshotIdProblem(msg::SnapshotId{"ab", 0, 1, "1", set}) == "world size 0 is not 1..16777216");
  CHECK(SnapshotIdProblem(msg::SnapshotId{"ab", 2, 7, "1", set}) == "ZeRO stage 7 is not 0..3");
}

}  // namespace
}  // namespace ds
