#include "launcher/cmd/job_list.h"

#include <fmt/format.h>

namespace ds {
namespace {

std::string Utc(time_t t) {
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

// 42s, 3m05s, 2h10m.
std::string Duration(double seconds) {
  const long s = seconds < 0 ? 0 : static_cast<long>(seconds);
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

}  // namespace

std::string JobListTable(const std::vector<JobListEntry>& jobs) {
  if (jobs.empty()) return "";
  std::string out = fmt::format("{:<14}{:<9}{:<24}{:<10}{:<6}{:<9}{:<7}{:<10}{}\n", "JOB", "PID", "STARTED (UTC)",
                                "STATE", "EXIT", "TIME", "WORLD", "RESTARTS", "COMMAND");
  for (const JobListEntry& e : jobs) {
    const JobView& v = e.view;
    const std::string state = e.live ? v.state : "ended";
    const std::string exit = e.live || v.exit_code < 0 ? "-" : std::to_string(v.exit_code);
    const std::string restarts = fmt::format("{}/{}", v.restarts, v.max_restarts);
    out += fmt::format("{:<14}{:<9}{:<24}{:<10}{:<6}{:<9}{:<7}{:<10}{}\n", v.job_id, v.pid, Utc(e.started), state, exit,
                       Duration(v.elapsed_seconds), v.world_size, restarts, e.command.empty() ? "-" : e.command);
  }
  return out;
}

}  // namespace ds
