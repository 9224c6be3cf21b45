// One simulated worker's store session, the pattern of a NCCL bootstrap
// through torch's store (what every rank does before its first collective):
// rank 0 publishes a 128-byte unique id; every rank gets it (blocking until
// it exists), then joins a barrier: add 1 to a counter, the last rank to
// arrive sets the "done" key, everyone waits for it. 4 to 5 requests per
// rank, O(world) for the store in all. Not thread-safe: the io thread only.
#pragma once

#include <functional>
#include <string>

#include "common/asio.h"

namespace ds::sim {

struct BootstrapSpec {
  std::string job_id;
  std::string store_token;  // DSLAUNCH_STORE_TOKEN of the generation
  int rank = 0;
  int world = 1;
  int generation = 0;
};

// Connects to `store` from `from`, runs the pattern, calls done(ok, why) once.
void RunBootstrap(asio::io_context& io, const asio::ip::tcp::endpoint& store, const asio::ip::address& from,
                  const BootstrapSpec& spec, std::function<void(bool ok, const std::string& why)> done);

}  // namespace ds::sim
