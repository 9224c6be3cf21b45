// The agent's side of --bind_cores_to_rank / --bind_core_list: which CPUs
// each local worker of an Assign gets, near its GPU where the node shows
// where its GPUs are. Pure (the caller passes what the node allows, its NUMA
// layout and its GPUs' nodes; common/cpu_binding.h reads them), so the mask
// is known before fork and the child only calls sched_setaffinity.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace ds {

// PlanCoreBinding's answer: one CPU list per local rank, and a line for the
// agent's log when the GPUs' NUMA nodes were given but could not be used
// (saying why; "" otherwise).
struct CoreBinding {
  std::vector<std::vector<int>> cores;
  std::string note;
};

// The NUMA node of each local rank's GPU, one per entry of `visible`. Local
// rank r uses the (r % n)-th of the n GPUs its CUDA_VISIBLE_DEVICES lists
// (visible[r]; nullopt when unset: every GPU of the node), as the trainer
// takes LOCAL_RANK modulo the visible GPUs. The indices are read in PCI bus
// order, `gpu_numa`'s (common/cpu_binding.h's GpuNumaNodes): a user whose
// CUDA numbering differs sets CUDA_DEVICE_ORDER=PCI_BUS_ID (we do not). -1
// for a rank whose GPU is no index into `gpu_numa` (a UUID, none visible).
// Empty when `gpu_numa` is (a node without GPUs).
std::vector<int> LocalRankGpuNuma(const std::vector<int>& gpu_numa,
                                  const std::vector<std::optional<std::string>>& visible);

// The cores to share out (`core_list`, or every allowed CPU when it is "")
// for `local_size` local ranks. With every rank's GPU node known
// (`gpu_numa`, LocalRankGpuNuma's) and showing CPUs in `numa_nodes` (node n
// at [n], NumaNodeCpus's): the ranks whose GPUs share node n split the cores
// on node n into equal slices in rank order. Otherwise the cores ordered NUMA
// node by node, sliced for all ranks (common/cpu_binding.h's CoreSlice): so
// always when `gpu_numa` is empty; with a note when a GPU's node is unknown
// or has fewer cores than ranks. Errors name the CPUs: "bind_core_list
// '0-7': CPUs 2-7 do not exist or are not allowed here (allowed: 0-1)", or
// "2 cores for 4 local ranks: ...".
Result<CoreBinding> PlanCoreBinding(const std::string& core_list, int local_size, const std::vector<int>& allowed,
                                    const std::vector<std::vector<int>>& numa_nodes,
                                    const std::vector<int>& gpu_numa);

}  // namespace ds
