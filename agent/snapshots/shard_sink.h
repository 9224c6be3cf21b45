// ShardSink: where the bytes of one shard go while they arrive from a peer.
// The peer link (peer_link.h) reads them off the socket in bounded steps,
// checks them against the announced size and crc32, and hands each step to
// the sink; the sink only stores them (SnapshotStore::Receive: a file in the
// agent's memory directory). So a shard costs the receiver what arrived, in
// the place it is kept, never a buffer of the size a peer announced.
// One owner, one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "agent/snapshots/shard_index.h"
#include "common/status.h"

namespace ds {

class ShardSink {
 public:
  virtual ~ShardSink() = default;  // without Commit(), whatever was written is discarded
  // Appends `n` bytes. An error (e.g. "No space left on device") ends the transfer.
  virtual Status Write(const uint8_t* data, size_t n) = 0;
  // Every announced byte arrived and matched the crc32: the shard is kept.
  virtual Status Commit() = 0;
};

// Opens the sink for the shard a ShardPut announced (`held`: its entry and
// crc32), or refuses it, e.g. when the receiver has no room for its size.
using OpenSink = std::function<Result<std::unique_ptr<ShardSink>>(const HeldShard& held, const std::string& manifest)>;

}  // namespace ds
