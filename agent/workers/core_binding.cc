#include "agent/workers/core_binding.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "common/cpu_binding.h"
#include "common/strings.h"

namespace ds {

namespace {

using CpuLists = std::vector<std::vector<int>>;

constexpr char kFallback[] = "binding by equal slices as without GPUs";

// The GPU rule: the ranks whose GPUs share node n split `cores`' share of
// node n. Fills `slices` and returns ""; or returns why the rule cannot be
// applied (`slices` then means nothing).
std::string SliceByGpuNode(const std::vector<int>& cores, int local_size, const CpuLists& numa_nodes,
                           const std::vector<int>& gpu_numa, CpuLists& slices) {
  if (gpu_numa.size() != static_cast<size_t>(local_size))
    return fmt::format("GPU NUMA nodes for {} of {} local ranks: {}", gpu_numa.size(), local_size, kFallback);
  std::map<int, std::vector<int>> ranks_of;  // NUMA node -> the local ranks whose GPUs are on it, ascending
  for (int r = 0; r < local_size; ++r) {
    const int n = gpu_numa[static_cast<size_t>(r)];
    if (n < 0) return fmt::format("NUMA node of local rank {}'s GPU unknown: {}", r, kFallback);
    if (static_cast<size_t>(n) >= numa_nodes.size() || numa_nodes[static_cast<size_t>(n)].empty())
      return fmt::format("local rank {}'s GPU is on NUMA node {}, which shows no CPUs: {}", r, n, kFallback);
    ranks_of[n].push_back(r);
  }
  slices.assign(static_cast<size_t>(local_size), {});
  for (const auto& [n, ranks] : ranks_of) {
    std::vector<int> node = numa_nodes[static_cast<size_t>(n)];
    std::sort(node.begin(), node.end());
    std::vector<int> mine;  // in the order of `cores`
    for (int c : cores)
      if (std::binary_search(node.begin(), node.end(), c)) mine.push_back(c);
    const size_t per = mine.size() / ranks.size();
    if (per == 0)
      return fmt::format("NUMA node {} has {} core{} to bind for the {} local rank{} whose GPU{} on it: {}", n,
                         mine.size(), mine.size() == 1 ? "" : "s", ranks.size(), ranks.size() == 1 ? "" : "s",
                         ranks.size() == 1 ? " is" : "s are", kFallback);
    for (size_t i = 0; i < ranks.size(); ++i) {
      auto begin = mine.begin() + static_cast<ptrdiff_t>(per * i);
      slices[static_cast<size_t>(ranks[i])].assign(begin, begin + static_cast<ptrdiff_t>(per));
    }
  }
  return "";
}

}  // namespace

std::vector<int> LocalRankGpuNuma(const std::vector<int>& gpu_numa,
                                  const std::vector<std::optional<std::string>>& visible) {
  std::vector<int> out;
  if (gpu_numa.empty()) return out;
  for (size_t r = 0; r < visible.size(); ++r) {
    std::vector<size_t> gpus;  // indices into gpu_numa, as the rank numbers them
    bool known = true;
    if (!visible[r]) {
      for (size_t g = 0; g < gpu_numa.size(); ++g) gpus.push_back(g);
    } else if (!visible[r]->empty()) {
      for (const std::string& item : Split(*visible[r], ',')) {
        auto g = ParseInt(Trim(item));
        if (!g || *g < 0 || static_cast<uint64_t>(*g) >= gpu_numa.size()) known = false;
        else gpus.push_back(static_cast<size_t>(*g));
      }
    }
    out.push_back(known && !gpus.empty() ? gpu_numa[gpus[r % gpus.size()]] : -1);
  }
  return out;
}

Result<CoreBinding> PlanCoreBinding(const std::string& core_list, int local_size, const std::vector<int>& allowed,
                                    const std::vector<std::vector<int>>& numa_nodes,
                                    const std::vector<int>& gpu_numa) {
  std::vector<int> cores = allowed;
  if (!core_list.empty()) {
    auto parsed = ParseCpuList(core_list);
    if (!parsed.ok())  // MakePlan checked it already; a hand-made Assign may not have been
      return Status::InvalidArgument(
          fmt::format("bind_core_list '{}': {}; expected {}", core_list, parsed.status().message(), kCoreListForm));
    std::vector<int> missing;
    for (int c : *parsed)
      if (!std::binary_search(allowed.begin(), allowed.end(), c)) missing.push_back(c);
    if (!missing.empty())
      return Status::InvalidArgument(
          fmt::format("bind_core_list '{}': CPU{} {} {} not exist or {} not allowed here (allowed: {})", core_list,
                      missing.size() == 1 ? "" : "s", FormatCpuList(missing), missing.size() == 1 ? "does" : "do",
                      missing.size() == 1 ? "is" : "are", FormatCpuList(allowed)));
    cores = std::move(parsed).value();
  }
  CoreBinding out;
  if (!gpu_numa.empty()) {
    out.note = SliceByGpuNode(cores, local_size, numa_nodes, gpu_numa, out.cores);
    if (out.note.empty()) return out;
    out.cores.clear();
  }
  cores = NumaOrder(cores, numa_nodes);
  for (int r = 0; r < local_size; ++r) {
    auto slice = CoreSlice(cores, r, local_size);
    if (!slice.ok()) return slice.status();
    out.cores.push_back(std::move(slice).value());
  }
  return out;
}

}  // namespace ds
