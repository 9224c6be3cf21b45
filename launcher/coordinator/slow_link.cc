// SlowLinkDetector (slow_link.h): medians of the last few round trips, one
// against the median of the others, with a halfway mark for recovery.
#include "launcher/coordinator/slow_link.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/log.h"

namespace ds {
namespace {

// The median of `v` (the upper one of an even count); `v` non-empty.
double Median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

std::string Ms(double seconds) {
  return seconds < 0.01 ? fmt::format("{:.1f} ms", seconds * 1e3) : fmt::format("{:.0f} ms", seconds * 1e3);
}

}  // namespace

void SlowLinkDetector::OnRoundTrip(uint32_t node, double seconds) {
  if (opt_.factor <= 0 || seconds < 0) return;
  std::deque<double>& s = nodes_[node].samples;
  s.push_back(seconds);
  if (s.size() > kSamples) s.pop_front();
}

// O(n log n): the others' median of a node is the sorted medians' middle
// with the node's own value left out.
std::vector<std::string> SlowLinkDetector::Judge(const std::vector<std::string>& names) {
  std::vector<std::pair<double, uint32_t>> medians;  // nodes with enough samples, sorted by median
  for (const auto& [node, n] : nodes_)
    if (n.samples.size() >= kSamples / 2 + 1) medians.emplace_back(Median({n.samples.begin(), n.samples.end()}), node);
  if (medians.size() < 3) return {};
  std::sort(medians.begin(), medians.end());
  const size_t mid = (medians.size() - 1) / 2;  // the upper median of the n - 1 others
  std::map<uint32_t, std::string> said;  // in node order
  for (size_t i = 0; i < medians.size(); ++i) {
    const auto [median, node] = medians[i];
    std::string line = Act(node, nodes_[node], median, medians[i <= mid ? mid + 1 : mid].first, names);
    if (!line.empty()) said[node] = std::move(line);
  }
  std::vector<std::string> lines;
  for (auto& [node, line] : said) lines.push_back(std::move(line));
  return lines;
}

std::string SlowLinkDetector::Act(uint32_t node, Node& n, double median, double others,
                                  const std::vector<std::string>& names) {
  DS_LOG(Debug, Coord) << "slow link: node " << node << " round trip " << median << " s, the others' " << others;
  const std::string name = node < names.size() ? names[node] : fmt::format("node {}", node);
  const double ratio = others > 0 ? median / others : 0;
  if (!n.reported) {
    if (median <= std::max(opt_.factor * others, others + opt_.floor)) return "";
    n.reported = true;
    return fmt::format("slow link: {} heartbeat round trip {}, {:.0f}x the other nodes' ({})", name, Ms(median),
                       ratio, Ms(others));
  }
  if (median >= std::max((1 + opt_.factor) / 2 * others, others + opt_.floor / 2)) return "";
  n.reported = false;
  return fmt::format("recovered: {} link, heartbeat round trip {} (the other nodes' {})", name, Ms(median),
                     Ms(others));
}

std::vector<uint32_t> SlowLinkDetector::Slow() const {
  std::vector<uint32_t> out;
  for (const auto& [node, n] : nodes_)
    if (n.reported) out.push_back(node);
  return out;
}

}  // namespace ds
