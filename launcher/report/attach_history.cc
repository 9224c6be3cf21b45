#include "launcher/report/attach_history.h"

#include <algorithm>

#include <fmt/format.h>

#include "launcher/report/job_summary.h"
#include "launcher/report/status_line.h"

namespace ds {

std::string AttachHistory(const JobView& view, const std::vector<Failure>& restart_causes,
                          const std::vector<std::string>& coordinator) {
  int64_t step = -1;
  for (const RankView& r : view.ranks) step = std::max(step, r.step);
  const int nodes_up = static_cast<int>(
      std::count_if(view.nodes.begin(), view.nodes.end(), [](const NodeView& n) { return n.state == "running"; }));
  std::string out = fmt::format("dslaunch attach: job {}: {} generation {}, world size {} on {} node{}, for {}{}\n",
                                view.job_id, view.state, view.generation, view.world_size, nodes_up,
                                nodes_up == 1 ? "" : "s", ElapsedText(view.elapsed_seconds),
                                step >= 0 ? fmt::format(", at step {}", step) : "");
  if (restart_causes.empty()) {
    out += "dslaunch attach: no restart so far\n";
  } else {
    out += fmt::format("dslaunch attach: {} restart{} so far (of at most {}):\n", restart_causes.size(),
                       restart_causes.size() == 1 ? "" : "s", view.max_restarts);
    for (size_t i = 0; i < restart_causes.size(); ++i)
      out += fmt::format("dslaunch attach:   {}. after {}\n", i + 1, DescribeFailure(restart_causes[i]));
  }
  for (const std::string& line : coordinator) out += "dslaunch attach: " + line + "\n";
  return out;
}

}  // namespace ds
