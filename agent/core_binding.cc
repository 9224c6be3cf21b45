#include "agent/core_binding.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/cpu_binding.h"

namespace ds {

Result<std::vector<std::vector<int>>> PlanCoreBinding(const std::string& core_list, int local_size,
                                                      const std::vector<int>& allowed,
                                                      const std::vector<std::vector<int>>& numa_nodes) {
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
  cores = NumaOrder(cores, numa_nodes);
  std::vector<std::vector<int>> out;
  for (int r = 0; r < local_size; ++r) {
    auto slice = CoreSlice(cores, r, local_size);
    if (!slice.ok()) return slice.status();
    out.push_back(std::move(slice).value());
  }
  return out;
}

}  // namespace ds
