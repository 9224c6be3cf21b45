// The shard file's constants and checksum, shared by the writer
// (checkpoint.cc) and the reader (checkpoint_load.cc). The layout is
// documented beside it in checkpoint_format.md.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <string>

namespace ds::ckpt {

inline constexpr char kShardMagic[8] = {'D', 'S', 'C', 'K', 'S', 'H', 'D', '1'};
inline constexpr uint32_t kShardVersion = 1;

// zlib's crc32 of `data` (the manifest records one per shard).
inline uint32_t Crc32(const std::string& data) {
  return static_cast<uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size())));
}

}  // namespace ds::ckpt
