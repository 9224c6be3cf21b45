#include "launcher/report/job_summary.h"

#include <signal.h>

#include <algorithm>
#include <ctime>

#include <fmt/format.h>

#include "common/strings.h"
#include "launcher/report/root_cause.h"

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

std::string DescribeFailure(const Failure& f) {
  if (f.rank < 0) return fmt::format("host {}: {}", f.host, f.what);
  std::string how = f.signal != 0 ? fmt::format("killed by signal {} ({})", f.signal, SignalName(f.signal))
                                  : fmt::format("exited with code {}", f.exit_code);
  if (f.hung) how += " after its step heartbeat stalled (hang_timeout)";
  return fmt::format("host {}, rank {}, pid {}: {}", f.host, f.rank, f.pid, how);
}

namespace {

constexpr size_t kSummaryFrames = 3;  // traceback frames shown for the failing rank

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

// The failing rank's own report (its TORCHELASTIC_ERROR_FILE): the message,
// then the innermost frames with their source lines.
std::string ErrorReport(const Failure& f) {
  if (f.error.message.empty()) return "";
  std::string out;
  std::vector<std::string> lines = Split(f.error.message, '\n');
  out += fmt::format("  rank {} error: {}\n", f.rank, lines.empty() ? "" : lines[0]);
  for (size_t i = 1; i < lines.size(); ++i) out += "    " + lines[i] + "\n";
  auto frames = LastFrames(f.error.traceback, kSummaryFrames);
  if (!frames.empty()) {
    out += fmt::format("  innermost {} frame{} of its traceback:\n", frames.size(), frames.size() == 1 ? "" : "s");
    for (const TraceFrame& fr : frames) {
      out += "    " + fr.location + "\n";
      if (!fr.source.empty()) out += "      " + fr.source + "\n";
    }
  }
  return out;
}

constexpr size_t kListedRanks = 64;  // failed ranks listed one per line; the rest counted

// Every rank that failed on its own, the root cause first, then in the order
// their failures reached dslaunch; and how many the stop ended.
std::string FailedRanks(const JobRecord& record) {
  const RootCauseChoice choice = ChooseRootCause(record);
  std::string out;
  if (choice.alike) {  // the cause's lines above are every one's: their ranks say the rest
    std::vector<int> ranks;
    for (const WorkerRecord* w : choice.failed) ranks.push_back(w->rank);
    std::sort(ranks.begin(), ranks.end());
    std::string list;
    for (size_t i = 0; i < ranks.size() && i < kListedRanks; ++i) list += (i ? ", " : "") + std::to_string(ranks[i]);
    if (ranks.size() > kListedRanks) list += fmt::format(" and {} more", ranks.size() - kListedRanks);
    out += fmt::format("  {} ranks failed the same way: {}\n", ranks.size(), list);
  } else if (choice.failed.size() > 1) {
    out += fmt::format("  {} ranks failed:\n", choice.failed.size());
    for (size_t i = 0; i < choice.failed.size() && i < kListedRanks; ++i) {
      const WorkerRecord& w = *choice.failed[i];
      out += fmt::format("    {} at {}{}{}\n", DescribeFailure(FailureOf(w)), FormatTime(w.end_time),
                         w.traceback_seq != 0 ? ", traceback from " + FormatTime(w.traceback_time) : "",
                         IsCollateralError(w) ? " (a lost connection)" : "");
    }
    if (choice.failed.size() > kListedRanks)
      out += fmt::format("    and {} more (their log lines have them)\n", choice.failed.size() - kListedRanks);
  }
  if (choice.stopped > 0)
    out += fmt::format("  {} other rank{} stopped by dslaunch\n", choice.stopped, choice.stopped == 1 ? " was" : "s were");
  return out;
}

// One line per elastic restart, with the failure that caused it.
std::string Restarts(const JobRecord& record) {
  std::string out;
  int n = 0;
  for (const Failure& f : record.restart_causes())
    out += fmt::format("  restart {} after a failure at {}: {}{}{}\n", ++n, FormatTime(f.time), DescribeFailure(f),
                       f.error.message.empty() ? "" : " (" + FirstLine(f.error.message) + ")",
                       f.in_place_failed.empty() ? "" : "; in-place reshape failed (" + f.in_place_failed + "), restarted");
  return out;
}

}  // namespace

std::string FormatSummary(const JobRecord& record, int world_size, bool color) {
  const char* red = color ? "\033[1;31m" : "";
  const char* reset = color ? "\033[0m" : "";
  const size_t restarts = record.restart_causes().size();
  const std::string snapshots = record.snapshot_summary.empty() ? "" : "  " + record.snapshot_summary + "\n";
  if (!record.first_failure()) {
    if (restarts == 0) return fmt::format("dslaunch: all {} workers exited 0\n", world_size) + snapshots;
    return fmt::format("dslaunch: all {} workers exited 0, after {} restart{}\n", world_size,
                       restarts, restarts == 1 ? "" : "s") +
           Restarts(record) + snapshots;
  }
  const Failure f = *record.RootCause();
  // A user's Ctrl-C (or a scheduler's SIGTERM) is a stop, not a failure of the job.
  const bool stopped = f.rank < 0 && f.signal != 0;
  std::string out = stopped ? fmt::format("{}dslaunch: stopped by {}{} at {}\n", red, SignalName(f.signal), reset,
                                          FormatTime(f.time))
                            : fmt::format("{}dslaunch: job failed{}; first failure at {}\n", red, reset,
                                          FormatTime(f.time));
  if (f.rank >= 0) {
    out += "  " + DescribeFailure(f) + "\n";
    if (!f.cause_note.empty() && !ChooseRootCause(record).alike)
      out += fmt::format("  root cause: rank {} ({})\n", f.rank, f.cause_note);
    out += ErrorReport(f);
    if (f.last_lines.empty()) {
      out += fmt::format("  rank {} printed nothing\n", f.rank);
    } else {
      out += fmt::format("  last {} line{} of rank {}:\n", f.last_lines.size(), f.last_lines.size() == 1 ? "" : "s",
                         f.rank);
      for (const auto& l : f.last_lines) out += "    | " + l + "\n";
    }
  } else if (f.signal != 0) {
    out += fmt::format("  dslaunch received {}; every worker was stopped\n", SignalName(f.signal));
  } else {
    out += "  " + DescribeFailure(f) + "\n";
  }
  if (f.rank >= 0) out += FailedRanks(record);
  if (restarts > 0)
    out += fmt::format("  that was generation {}; before it:\n", record.generation()) + Restarts(record);
  out += snapshots;
  out += fmt::format("dslaunch: exit code {}\n", f.ProcessExitCode());
  return out;
}

}  // namespace ds
