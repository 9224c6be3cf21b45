// Reading a checkpoint's manifest.json (the format: checkpoint_format.md).
// The whole manifest is validated before any of it is used: every key
// present, of its type and in its range, and the shard list naming
// shard_<r>.bin for r = 0..world_size-1, so a corrupt manifest is one error
// (and the checkpoint is skipped), never an exception. Stateless, thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/checkpoint/checkpoint.h"

namespace ds::rt {

struct ManifestShard {
  std::string file;  // "shard_<r>.bin", r its position in the list
  uint64_t bytes = 0;
  uint32_t crc32 = 0;
};

struct Manifest {
  CheckpointMeta meta;
  std::vector<ManifestShard> shards;  // meta.world_size entries
};

// The manifest in `text`, or InvalidArgument naming the first bad field:
// "manifest.json: 'step': expected an integer, got 'ten'",
// "manifest.json: 'shards[1].crc32' is missing",
// "manifest.json:4:1: YAML syntax error: end of map not found".
Result<Manifest> ParseManifest(const std::string& text);

}  // namespace ds::rt
