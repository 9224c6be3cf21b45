// The names a worker and its agent share for snapshot shards
// (checkpoint_format/checkpoint_format.md "Snapshots" and "Run identity"). A worker
// hands a shard over in <DSLAUNCH_SNAPSHOT_DIR>/incoming/ as
//   <step, 8 digits>.<rank>.<world>.<stage>.<config>.<run>.<crc32, 8 hex>.shard     then
//   <step, 8 digits>.<rank>.<world>.<stage>.<config>.<run>.<crc32, 8 hex>.manifest  (its arrival completes it)
// so the agent learns what it holds, and which run and config it belongs to,
// from the name alone; the save it belongs to (the set) is the digest of the
// manifest. Held steps live in step_<step, 8 digits>.<set>/, one directory
// per save, so two saves of one step never share a directory. Written by
// dstrain (runtime/checkpoint/snapshot.cc), read by dsagent
// (agent/snapshots/store.cc). Pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "wire/protocol.h"

namespace ds {

struct Handoff {
  int64_t step = 0;
  uint32_t rank = 0;
  uint32_t crc32 = 0;    // of the shard file's bytes
  msg::SnapshotId id;    // run, world, zero_stage, config (the set is the agent's to compute)
};

inline constexpr char kHandoffShard[] = "shard";
inline constexpr char kHandoffManifest[] = "manifest";

// "<step>.<rank>.<world>.<stage>.<config>.<run>.<crc32>.<suffix>"
std::string HandoffName(const Handoff& h, const char* suffix);
// The handoff a ".manifest" name describes; nullopt for any other name
// (the .shard, a temporary name, rank >= world, an id SnapshotIdProblem
// refuses).
std::optional<Handoff> ParseHandoffManifest(const std::string& name);

// The set of a save: the first 16 hex digits of the SHA-256 of its manifest.
std::string ManifestDigest(const std::string& manifest);
bool IsSetDigest(const std::string& s);  // 16 lowercase hex digits
bool IsRunId(const std::string& s);      // 1 to 32 lowercase hex digits
// "" when `id` may name files: run 1..32 and config 1..16 lowercase hex
// digits, world 1..2^24, stage 0..3, set a digest or (handoffs) empty;
// else what is wrong with it.
std::string SnapshotIdProblem(const msg::SnapshotId& id, bool set_required = true);
// "step_<step, 8 digits>.<set>": the directory of one save of a step.
std::string SnapshotStepDirName(int64_t step, const std::string& set);

}  // namespace ds
