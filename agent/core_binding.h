// The agent's side of --bind_cores_to_rank / --bind_core_list: which CPUs
// each local worker of an Assign gets. Pure (the caller passes what the
// node allows and its NUMA layout; common/cpu_binding.h reads them), so the
// mask is known before fork and the child only calls sched_setaffinity.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace ds {

// The cores to share out (`core_list`, or every allowed CPU when it is ""),
// ordered NUMA node by node, then sliced for `local_size` local ranks
// (common/cpu_binding.h's CoreSlice): one CPU list per local rank. Errors
// name the CPUs: "bind_core_list '0-7': CPUs 2-7 do not exist or are not
// allowed here (allowed: 0-1)", or "2 cores for 4 local ranks: ...".
Result<std::vector<std::vector<int>>> PlanCoreBinding(const std::string& core_list, int local_size,
                                                      const std::vector<int>& allowed,
                                                      const std::vector<std::vector<int>>& numa_nodes);

}  // namespace ds
