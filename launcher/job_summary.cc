#include "launcher/job_summary.h"

#include <signal.h>

#include <ctime>

#include <fmt/format.h>

namespace ds {

std::string SignalName(int sig) {
  switch (sig) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGUSR1: return "SIGUSR1";
    case SIGSEGV: return "SIGSEGV";
    case SIGUSR2: return "SIGUSR2";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    case SIGXCPU: return "SIGXCPU";
    default: return fmt::format("SIG{}", sig);
  }
}

namespace {

std::string FormatTime(std::chrono::system_clock::time_point t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000;
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  return fmt::format("{}.{:03d} UTC", buf, ms);
}

}  // namespace

std::string FormatSummary(const JobRecord& record, int world_size, bool color) {
  const char* red = color ? "\033[1;31m" : "";
  const char* reset = color ? "\033[0m" : "";
  if (!record.first_failure()) {
    return fmt::format("dslaunch: all {} workers exited 0\n", world_size);
  }
  const Failure& f = *record.first_failure();
  std::string out = fmt::format("{}dslaunch: job failed{}; first failure at {}\n", red, reset, FormatTime(f.time));
  if (f.rank >= 0) {
    std::string how = f.signal != 0 ? fmt::format("killed by signal {} ({})", f.signal, SignalName(f.signal))
                                    : fmt::format("exited with code {}", f.exit_code);
    if (f.hung) how += " after its step heartbeat stalled (hang_timeout)";
    out += fmt::format("  host {}, rank {}, pid {}: {}\n", f.host, f.rank, f.pid, how);
    if (f.last_lines.empty()) {
      out += fmt::format("  rank {} printed nothing\n", f.rank);
    } else {
      out += fmt::format("  last {} lines of rank {}:\n", f.last_lines.size(), f.rank);
      for (const auto& l : f.last_lines) out += "    | " + l + "\n";
    }
  } else if (f.signal != 0) {
    out += fmt::format("  dslaunch received {}; every worker was stopped\n", SignalName(f.signal));
  } else {
    out += fmt::format("  host {}: {}\n", f.host, f.what);
  }
  out += fmt::format("dslaunch: exit code {}\n", f.ProcessExitCode());
  return out;
}

}  // namespace ds
