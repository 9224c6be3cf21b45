#include "common/cpu_binding.h"

#include <sched.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "common/strings.h"

namespace ds {

const char kCoreListForm[] = "a list like 0-3,8-11";

namespace {

constexpr int kMaxCpu = 1 << 20;  // a CPU number beyond this is a typo, not a machine

// A non-negative decimal of plain digits, or -1.
int ParseCpu(std::string_view s) {
  if (s.empty() || s.size() > 7) return -1;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v <= kMaxCpu ? v : -1;
}

}  // namespace

Result<std::vector<int>> ParseCpuList(const std::string& text) {
  if (text.empty()) return Status::InvalidArgument("the list is empty");
  std::vector<int> out;
  int last = -1;
  for (const std::string& item : Split(text, ',')) {
    size_t dash = item.find('-');
    int lo = ParseCpu(dash == std::string::npos ? item : item.substr(0, dash));
    int hi = dash == std::string::npos ? lo : ParseCpu(item.substr(dash + 1));
    if (lo < 0 || hi < 0)
      return Status::InvalidArgument(fmt::format("'{}': expected a CPU number or a range A-B", item));
    if (hi < lo) return Status::InvalidArgument(fmt::format("'{}': a range must not end below its start", item));
    if (lo <= last)
      return Status::InvalidArgument(
          fmt::format("'{}': items must be in ascending order without overlap", item));
    for (int c = lo; c <= hi; ++c) out.push_back(c);
    last = hi;
  }
  return out;
}

std::string FormatCpuList(std::vector<int> cpus) {
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? std::to_string(cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
    i = j + 1;
  }
  return out;
}

std::vector<int> NumaOrder(const std::vector<int>& cpus, const std::vector<std::vector<int>>& nodes) {
  if (std::count_if(nodes.begin(), nodes.end(), [](const auto& n) { return !n.empty(); }) < 2) return cpus;
  std::map<int, size_t> node_of;
  for (size_t n = 0; n < nodes.size(); ++n)
    for (int c : nodes[n]) node_of.emplace(c, n);
  auto key = [&](int c) {
    auto it = node_of.find(c);
    return it == node_of.end() ? nodes.size() : it->second;
  };
  std::vector<int> out = cpus;
  std::stable_sort(out.begin(), out.end(), [&](int a, int b) { return key(a) < key(b); });
  return out;
}

Result<std::vector<int>> CoreSlice(const std::vector<int>& cores, int local_rank, int local_size) {
  if (local_size < 1 || local_rank < 0 || local_rank >= local_size)
    return Status::InvalidArgument(fmt::format("local rank {} of {} is out of range", local_rank, local_size));
  const size_t per = cores.size() / static_cast<size_t>(local_size);
  if (per == 0)
    return Status::InvalidArgument(fmt::format("{} core{} for {} local ranks: each rank needs at least one core",
                                               cores.size(), cores.size() == 1 ? "" : "s", local_size));
  auto begin = cores.begin() + static_cast<ptrdiff_t>(per * static_cast<size_t>(local_rank));
  return std::vector<int>(begin, begin + static_cast<ptrdiff_t>(per));
}

std::vector<int> AllowedCpus() {
  std::vector<int> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

std::vector<std::vector<int>> NumaNodeCpus(const std::string& root) {
  std::map<int, std::vector<int>> by_node;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(root, ec)) {
    std::string name = e.path().filename().string();
    if (!StartsWith(name, "node")) continue;
    int n = ParseCpu(name.substr(4));
    if (n < 0) continue;
    std::ifstream in(e.path() / "cpulist");
    std::string line;
    if (!std::getline(in, line)) continue;
    auto cpus = ParseCpuList(std::string(Trim(line)));
    if (cpus.ok()) by_node[n] = std::move(cpus).value();  // a memory-only node's list is empty: left empty
  }
  std::vector<std::vector<int>> out;
  if (!by_node.empty()) out.resize(static_cast<size_t>(by_node.rbegin()->first) + 1);
  for (auto& [n, cpus] : by_node) out[static_cast<size_t>(n)] = std::move(cpus);
  return out;
}

int VisibleGpus() {
  int n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev", ec)) {
    const std::string name = e.path().filename().string();
    if (StartsWith(name, "nvidia") && ParseInt(name.substr(6))) ++n;
  }
  return n;
}

std::vector<int> GpuNumaNodes(const std::string& gpus_dir, const std::string& pci_dir) {
  std::vector<std::string> bus_ids;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(gpus_dir, ec))
    bus_ids.push_back(e.path().filename().string());
  std::sort(bus_ids.begin(), bus_ids.end());  // "dddd:bb:dd.f", fixed-width hex: text order is bus order
  std::vector<int> out;
  for (const std::string& id : bus_ids) {
    std::ifstream in(pci_dir + "/" + id + "/numa_node");
    std::string line;
    std::optional<int64_t> node;
    if (std::getline(in, line)) node = ParseInt(Trim(line));
    // kMaxCpu bounds a node number as well: a node beyond it is no machine's
    out.push_back(node && *node >= 0 && *node <= kMaxCpu ? static_cast<int>(*node) : -1);
  }
  return out;
}

}  // namespace ds
