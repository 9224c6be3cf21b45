// A small shard and its metadata, the same in every snapshot test: six
// parameters with two optimizer slots, `base` shifting the parameters so
// that two saves differ byte for byte.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/checkpoint/checkpoint.h"

namespace ds::testing {

inline rt::ShardState Shard(float base) {
  rt::ShardState s;
  s.segments = {{0, 0, 6, 0}};
  s.master.resize(6);
  s.state.assign(2, std::vector<float>(6));
  for (size_t i = 0; i < 6; ++i) {
    s.master[i] = base + static_cast<float>(i);
    s.state[0][i] = -static_cast<float>(i);
    s.state[1][i] = 0.25f * static_cast<float>(i);
  }
  return s;
}

inline rt::CheckpointMeta Meta(int64_t step) {
  rt::CheckpointMeta m;
  m.step = step;
  m.applied_steps = step;
  m.epoch = 2;
  m.sample_position = 96;
  m.num_params = 6;
  m.state_slots = 2;
  m.run_id = "6b0735a0c0ffee00";
  m.config_hash = "0badf00d";
  return m;
}

}  // namespace ds::testing
