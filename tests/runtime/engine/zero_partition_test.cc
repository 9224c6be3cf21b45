// ZeroPartition: the pieces cover each layer once, in rank order; and the
// padded layout (DeepSpeed's, which the device engine hands to NCCL's
// equal-count collectives) holds the same data: an all-gather and a
// reduce-scatter simulated over padded buffers give what the uneven pieces
// give, for layer sizes that divide by the world and sizes that do not
// (down to pieces that are empty).
#include "runtime/engine/zero_partition.h"

#include <catch2/catch.hpp>

#include <numeric>
#include <vector>

namespace ds::rt {
namespace {

std::vector<LayerShape> Layers(const std::vector<int>& sizes) {
  std::vector<LayerShape> layers;
  size_t offset = 0;
  for (int size : sizes) {
    LayerShape s;
    s.in = size - 1;  // in x out weights + out biases: size elements with out = 1
    s.out = 1;
    s.offset = offset;
    REQUIRE(s.size() == static_cast<size_t>(size));
    offset += s.size();
    layers.push_back(s);
  }
  return layers;
}

TEST_CASE("ZeroPartition: the pieces cover every layer once, in rank order", "[zero_partition]") {
  const auto layers = Layers({10, 5, 1, 12, 7});
  for (int world : {1, 2, 3, 4, 7}) {
    CAPTURE(world);
    for (size_t l = 0; l < layers.size(); ++l) {
      size_t at = layers[l].offset;
      for (int r = 0; r < world; ++r) {
        const ZeroPartition p(layers, world, r);
        const Segment& seg = p.Owned(static_cast<int>(l));
        CHECK(seg.len == p.LayerCounts(static_cast<int>(l))[r]);
        if (seg.len > 0) CHECK(seg.flat_offset == at);
        at += seg.len;
      }
      CHECK(at == layers[l].offset + layers[l].size());
    }
  }
}

TEST_CASE("ZeroPartition: the padded layout gathers and reduce-scatters to the uneven pieces' result",
          "[zero_partition]") {
  const auto layers = Layers({10, 5, 1, 12, 7});
  const size_t total = 35;
  for (int world : {1, 2, 3, 4, 7}) {
    CAPTURE(world);
    std::vector<ZeroPartition> ranks;
    for (int r = 0; r < world; ++r) ranks.emplace_back(layers, world, r);
    for (int l = 0; l < static_cast<int>(layers.size()); ++l) {
      CAPTURE(l);
      const size_t stride = ranks[0].Stride(l), size = layers[l].size();
      CHECK(ranks[0].PaddedCounts(l) == std::vector<size_t>(world, stride));
      // All-gather: rank r's piece (of a flat vector 0, 1, 2, ...) in slot r, zero padded.
      std::vector<float> gathered(world * stride, -1);
      for (int r = 0; r < world; ++r) {
        const Segment& seg = ranks[r].Owned(l);
        REQUIRE(seg.len <= stride);
        for (size_t i = 0; i < stride; ++i)
          gathered[r * stride + i] = i < seg.len ? static_cast<float>(seg.flat_offset + i) : 0.0f;
      }
      for (size_t i = 0; i < size; ++i) CHECK(gathered[i] == static_cast<float>(layers[l].offset + i));
      // Reduce-scatter: rank q's gradient of the layer is (q + 1) * (i + 1), zero padded; slot r
      // of the sum is rank r's piece of the summed gradient, then zeros.
      std::vector<float> sum(world * stride, 0);
      for (int q = 0; q < world; ++q)
        for (size_t i = 0; i < size; ++i) sum[i] += static_cast<float>((q + 1) * (i + 1));
      const float ranks_sum = world * (world + 1) / 2.0f;
      for (int r = 0; r < world; ++r) {
        const Segment& seg = ranks[r].Owned(l);
        for (size_t i = 0; i < stride; ++i) {
          const size_t in_layer = seg.flat_offset - layers[l].offset + i;
          CHECK(sum[r * stride + i] == (i < seg.len ? ranks_sum * static_cast<float>(in_layer + 1) : 0.0f));
        }
      }
    }
    // The padded shard: each layer's piece at the sum of the strides before it.
    size_t at = 0;
    for (int l = 0; l < static_cast<int>(layers.size()); ++l) {
      CHECK(ranks[world - 1].PaddedOffset(l) == at);
      at += ranks[0].Stride(l);
    }
    CHECK(ranks[world - 1].padded_shard_size() == at);
    CHECK(ranks[0].shard_size() <= at);
    size_t pieces = 0;
    for (const ZeroPartition& p : ranks) pieces += p.shard_size();
    CHECK(pieces == total);
  }
}

}  // namespace
}  // namespace ds::rt
