// Node facts the agent reports in Register: names, addresses, the interface
// that routes to the coordinator, CPU and GPU counts, and the agent's own
// values of the variables WorkerEnv must not override. Reads kernel state;
// thread-safe.
#pragma once

#include <string>

#include "wire/protocol.h"

namespace ds {

// `bind_addr` ("" = detect from the route to `coordinator_host`).
Result<msg::Register> GatherNodeFacts(int node_index, const std::string& host, const std::string& bind_addr,
                                      const std::string& coordinator_host);

// CPUs this process may run on (sched_getaffinity), at least 1.
int UsableCpus();

}  // namespace ds
