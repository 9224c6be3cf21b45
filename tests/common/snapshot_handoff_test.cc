// The handoff names between dstrain and its agent (common/snapshot_handoff.h).
#include "common/snapshot_handoff.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

TEST_CASE("snapshot handoff: names carry step, rank, world and crc32, and parse back exactly", "[snapshots]") {
  const Handoff h{400, 1, 3, 0xdeadbeef};
  CHECK(HandoffName(h, kHandoffManifest) == "00000400.1.3.deadbeef.manifest");
  CHECK(HandoffName(h, kHandoffShard) == "00000400.1.3.deadbeef.shard");
  auto p = ParseHandoffManifest("00000400.1.3.deadbeef.manifest");
  REQUIRE(p);
  CHECK(p->step == 400);
  CHECK(p->rank == 1);
  CHECK(p->world == 3);
  CHECK(p->crc32 == 0xdeadbeef);
  CHECK(ParseHandoffManifest(HandoffName(Handoff{123456789, 0, 1, 0}, kHandoffManifest))->step == 123456789);
}

TEST_CASE("snapshot handoff: anything else is not a handoff", "[snapshots]") {
  for (const char* bad : {"00000400.1.3.deadbeef.shard", "00000400.3.3.deadbeef.manifest",
                          "00000400.1.0.deadbeef.manifest", "x.1.3.deadbeef.manifest", "00000400.1.3.manifest",
                          "00000400.1.3.deadbeef.manifest.tmp", ".manifest", "00000400.-1.3.deadbeef.manifest",
                          "00000400.1.3.DEADBEEF.manifest", "00000400.1.3.deadbee.manifest",
                          "00000400.1.99999999.deadbeef.manifest", "00000400.1.3.deadbeefx.manifest", ""})
    CHECK_FALSE(ParseHandoffManifest(bad));
}

}  // namespace
}  // namespace ds
