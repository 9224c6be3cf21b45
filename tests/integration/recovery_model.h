// What the recovery property test's sequences train and save
// (recovery_property_test.cc): three model/optimizer configs, the full
// state a data-parallel job holds, a record of every save, the checksum of
// one rank's piece of it, and the files on a node's disk.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "checkpoint_format/checkpoint_format.h"
#include "runtime/checkpoint/checkpoint.h"
#include "runtime/engine/zero_partition.h"
#include "tests/test_util/files.h"

namespace ds::testing {

// Two configs of one shape (relu, gelu: only the config hash tells them
// apart) and one of another shape; Adam (2 state slots) throughout.
struct Model {
  std::vector<int> sizes;
  rt::Activation activation;
  std::vector<rt::LayerShape> layers;
  size_t params = 0;
  std::string hash;
};
inline Model MakeModel(std::vector<int> sizes, rt::Activation act) {
  Model m{sizes, act, {}, 0, rt::ModelConfigHash(rt::MlpConfig{sizes, act}, rt::OptimizerType::kAdam)};
  for (size_t l = 0; l + 1 < sizes.size(); ++l) {
    m.layers.push_back(rt::LayerShape{sizes[l], sizes[l + 1], m.params});
    m.params += m.layers.back().size();
  }
  return m;
}
inline const std::vector<Model>& Models() {
  static const std::vector<Model> models = {MakeModel({4, 6, 3}, rt::Activation::kRelu),
                                            MakeModel({4, 6, 3}, rt::Activation::kGelu),
                                            MakeModel({4, 5, 3}, rt::Activation::kRelu)};
  return models;
}

struct State {
  std::vector<float> master;
  std::vector<std::vector<float>> slots;  // Adam's two
};
// What a save was, as the sequence made it (found by run, step and world
// size and then by content, never by the system's own digest).
struct Saved {
  std::string run;
  int64_t step;
  int world;
  std::string config;
  State state;
};

inline uint32_t CrcOf(const std::vector<float>& v, const rt::Segment& s) {
  return ckpt::Crc32(std::string(reinterpret_cast<const char*>(v.data() + s.flat_offset), s.len * sizeof(float)));
}

// Every regular file under `dir`, with its bytes.
inline std::map<std::string, std::string> Files(const std::string& dir) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec); !ec && it != std::filesystem::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_regular_file()) out[it->path().string()] = ReadFile(it->path().string());
  return out;
}

// What the sequences exercised, printed at the end.
struct Tally {
  int resumes = 0, own = 0, earlier = 0, resharded = 0, fresh = 0, fresh_config = 0, fallbacks = 0, cut = 0;
  int faults = 0;
};

}  // namespace ds::testing
