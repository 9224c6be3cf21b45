#include "runtime/engine/zero_partition.h"

#include <algorithm>

#include "common/check.h"

namespace ds::rt {

ZeroPartition::ZeroPartition(const std::vector<LayerShape>& layers, int world, int rank)
    : world_(world), rank_(rank) {
  DS_CHECK(world >= 1 && rank >= 0 && rank < world);
  for (size_t l = 0; l < layers.size(); ++l) {
    const size_t size = layers[l].size();
    const size_t piece = (size + world - 1) / world;
    std::vector<size_t> counts(world);
    for (int r = 0; r < world; ++r) {
      const size_t lo = std::min(size, piece * r);
      const size_t hi = std::min(size, piece * (r + 1));
      counts[r] = hi - lo;
    }
    Segment seg;
    seg.layer = static_cast<int>(l);
    seg.flat_offset = layers[l].offset + std::min(size, piece * rank);
    seg.len = counts[rank];
    seg.shard_offset = shard_size_;
    shard_size_ += seg.len;
    padded_offsets_.push_back(padded_shard_size_);
    padded_shard_size_ += piece;
    owned_.push_back(seg);
    counts_.push_back(std::move(counts));
  }
}

std::vector<LayerShape> LayersOf(const Mlp& model) {
  std::vector<LayerShape> out;
  for (int l = 0; l < model.num_layers(); ++l) out.push_back(model.layer(l));
  return out;
}

}  // namespace ds::rt
