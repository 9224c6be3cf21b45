// ZeroPartition: which slice of the flat parameter vector each rank owns.
// Every layer's range [offset, offset + size) is cut into `world` contiguous
// pieces of ceil(size / world) elements (the last ones shorter or empty), so
// a layer can be all-gathered (ZeRO-3 forward/backward) or reduce-scattered
// (ZeRO-2 gradients) on its own. A rank's shard is the concatenation of its
// pieces of every layer, in layer order. Stage 0 uses world = 1 (one rank
// owns everything). Immutable value type, thread-safe.
#pragma once

#include <cstddef>
#include <vector>

#include "runtime/model/model.h"

namespace ds::rt {

struct Segment {
  size_t flat_offset = 0;   // in the flat parameter vector
  size_t shard_offset = 0;  // in this rank's shard
  size_t len = 0;
  int layer = 0;
};

class ZeroPartition {
 public:
  ZeroPartition(const std::vector<LayerShape>& layers, int world, int rank);

  int world() const { return world_; }
  int rank() const { return rank_; }

  // Element counts per rank for layer l (sums to layer size).
  const std::vector<size_t>& LayerCounts(int layer) const { return counts_[layer]; }
  // This rank's piece of layer l.
  const Segment& Owned(int layer) const { return owned_[layer]; }
  const std::vector<Segment>& owned() const { return owned_; }
  size_t shard_size() const { return shard_size_; }

  // DeepSpeed's padded partition of layer l: every rank's piece takes
  // Stride(l) = ceil(size / world) elements, the last pieces padded. Since
  // every piece before a short one is whole, rank r's piece starts at
  // r * Stride(l) in a buffer of world * Stride(l) elements, whose first
  // size elements are the layer: NCCL's equal-count all-gather and
  // reduce-scatter run on such buffers directly. PaddedOffset(l) is where
  // this rank's piece of layer l starts in a shard of padded pieces
  // (padded_shard_size() elements).
  size_t Stride(int layer) const { return counts_[layer][0]; }
  std::vector<size_t> PaddedCounts(int layer) const { return std::vector<size_t>(world_, Stride(layer)); }
  size_t PaddedOffset(int layer) const { return padded_offsets_[layer]; }
  size_t padded_shard_size() const { return padded_shard_size_; }

 private:
  int world_;
  int rank_;
  std::vector<std::vector<size_t>> counts_;
  std::vector<Segment> owned_;
  size_t shard_size_ = 0;
  std::vector<size_t> padded_offsets_;
  size_t padded_shard_size_ = 0;
};

// The layer shapes of a model, in order.
std::vector<LayerShape> LayersOf(const Mlp& model);

}  // namespace ds::rt
