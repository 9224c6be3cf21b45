// The names a worker hands a snapshot shard to its agent under
// (runtime/checkpoint_format.md "Snapshots"): in <DSLAUNCH_SNAPSHOT_DIR>/incoming/,
//   <step, 8 digits>.<rank>.<world>.<crc32, 8 hex>.shard      then
//   <step, 8 digits>.<rank>.<world>.<crc32, 8 hex>.manifest   (its arrival completes it)
// so the agent learns what it holds from the name alone, without reading the
// bytes. Written by dstrain (runtime/checkpoint_snapshot.cc), read by dsagent
// (agent/snapshot_store.cc). Pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ds {

struct Handoff {
  int64_t step = 0;
  uint32_t rank = 0;
  uint32_t world = 1;
  uint32_t crc32 = 0;   // of the shard file's bytes
};

inline constexpr char kHandoffShard[] = "shard";
inline constexpr char kHandoffManifest[] = "manifest";

// "<step>.<rank>.<world>.<crc32>.<suffix>"
std::string HandoffName(const Handoff& h, const char* suffix);
// The handoff a ".manifest" name describes; nullopt for any other name
// (the .shard, a temporary name, rank >= world, a world of 0 or above 2^24).
std::optional<Handoff> ParseHandoffManifest(const std::string& name);

}  // namespace ds
