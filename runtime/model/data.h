// Data sets and sampling for the trainer: Fashion-MNIST read directly from
// its gzip'd IDX files (zlib), a seeded synthetic data set for benchmarks,
// and DistributedSampler with PyTorch's semantics. Loaders return Status
// errors that name the file; everything here is pure or read-only after
// construction, so a Dataset may be shared by threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/config/training_options.h"

namespace ds::rt {

// Samples stored row-major: x is n x features floats, y is n labels.
struct Dataset {
  int64_t n = 0;
  int features = 0;
  int classes = 0;
  std::vector<float> x;
  std::vector<int32_t> y;
  const float* sample(int64_t i) const { return x.data() + i * features; }
};

// Reads an IDX image file (magic 0x00000803) and label file (0x00000801),
// gzip'd or plain (zlib reads both). Errors (NotFound, IOError,
// InvalidArgument) name the file and what was wrong: missing, bad magic,
// truncated, count mismatch between the two files, label out of range.
Result<Dataset> LoadIdx(const std::string& images_path, const std::string& labels_path,
                        PixelNorm norm = PixelNorm::kMeanStd);

// dir/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz.
Result<Dataset> LoadFashionMnist(const std::string& dir, bool train,
                                 PixelNorm norm = PixelNorm::kMeanStd);

// A learnable synthetic set: class centers ~ N(0,1), samples = center + noise.
Dataset MakeSynthetic(const SyntheticOptions& options);

struct SamplerOptions {
  int64_t dataset_size = 0;
  int rank = 0;
  int world_size = 1;
  uint64_t seed = 0;      // epoch e shuffles with seed + e
  bool shuffle = true;
  bool drop_last = false;  // drop the tail that does not divide by world_size
};

// PyTorch DistributedSampler semantics: each epoch a permutation of the whole
// data set (seeded with seed + epoch); without drop_last it is padded by
// wrapping around to a multiple of world_size, with drop_last the tail is
// cut; rank r takes positions r, r + world, r + 2*world, ...
//
// Resume: `consumed` is the number of positions of the epoch's global order
// already used by all ranks together (e.g. steps * micro_batch * world). The
// rest of the epoch is sharded anew over the current world size, so a job may
// resume at another world size without repeating or skipping samples.
class DistributedSampler {
 public:
  // Checks (programming errors): world_size >= 1, 0 <= rank < world_size.
  explicit DistributedSampler(SamplerOptions options);

  // This rank's sample indices for `epoch`, starting after `consumed` global
  // positions.
  std::vector<int64_t> Indices(int64_t epoch, int64_t consumed = 0) const;

  // Samples per rank in a full epoch (PyTorch's num_samples).
  int64_t num_samples() const;
  const SamplerOptions& options() const { return options_; }

 private:
  SamplerOptions options_;
};

}  // namespace ds::rt
