#include "agent/warm/spares.h"

#include <sys/resource.h>
#include <sys/wait.h>

#include <cerrno>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/files.h"
#include "common/log.h"

namespace ds {

bool MayRaisePriorityTo(int nice) {
  auto status = ReadTextFile("/proc/self/status", "process status");
  if (status.ok()) {
    const size_t at = status->find("CapEff:");
    if (at != std::string::npos) {
      const unsigned long long caps = std::strtoull(status->c_str() + at + 7, nullptr, 16);
      if (caps & (1ull << 23)) return true;  // CAP_SYS_NICE
    }
  }
  rlimit rl{};
  return ::getrlimit(RLIMIT_NICE, &rl) == 0 && (rl.rlim_cur == RLIM_INFINITY || 20 - nice <= static_cast<int>(rl.rlim_cur));
}

std::unique_ptr<WorkerProcess> WarmSpares::Take(size_t i, const WorkerLaunch& launch) {
  if (i >= spares_.size() || !spares_[i]) return nullptr;
  std::unique_ptr<WarmSpare> spare = std::move(spares_[i]);
  auto cmd = SplitPythonCommand(launch.argv);
  std::string why;
  if (spare->state() == SpareState::kImporting) why = "its warm spare is still importing";
  else if (spare->state() != SpareState::kReady) why = "its warm spare failed: " + spare->why();
  else if (!cmd) why = fmt::format("the command is not a Python script or module ('{}')", launch.argv.front());
  else if (std::string d = SpareMismatch(spare->start(), {cmd->interpreter, launch.env, launch.working_dir, launch.cpus});
           !d.empty())
    why = "its warm spare started with other settings: " + d;
  if (why.empty()) {
    auto worker = spare->HandOff(launch, cmd->target);
    if (worker.ok()) return std::move(worker).value();
    why = "its warm spare did not take the assignment: " + worker.status().message();
  }
  DS_LOG(Warn, Proc) << "local rank " << i << " starts cold: " << why;
  return nullptr;
}

void WarmSpares::Refill(const std::vector<std::optional<WorkerLaunch>>& launches,
                        const std::vector<std::string>& preload) {
  spares_.clear();
  if (preload.empty() || !off_.empty() || launches.empty()) return;
  const WorkerLaunch* first = nullptr;
  for (const auto& l : launches)
    if (l && !first) first = &*l;
  if (first == nullptr) return;
  auto cmd = SplitPythonCommand(first->argv);
  if (!cmd) {
    off_ = fmt::format("the command is not a Python script or module ('{}')", first->argv.front());
    DS_LOG(Warn, Proc) << "python.preload: no warm spares, " << off_ << "; workers start cold";
    return;
  }
  auto meminfo = ReadTextFile("/proc/meminfo", "memory information");
  auto available = meminfo.ok() ? MemAvailableKiB(*meminfo) : std::nullopt;
  if (std::string no = available ? SparesDoNotFit(*available, launches.size()) : "MemAvailable is unknown";
      !no.empty()) {
    DS_LOG(Warn, Proc) << "python.preload: no warm spares for the next generation: " << no;
    return;
  }
  errno = 0;
  const int nice = ::getpriority(PRIO_PROCESS, 0);
  const bool low = errno == 0 && nice < 19 && MayRaisePriorityTo(nice);
  if (!low && !told_nice_) {
    told_nice_ = true;
    DS_LOG(Info, Proc) << "python.preload: spares import at the workers' priority (no CAP_SYS_NICE or RLIMIT_NICE "
                          "to return a worker from nice 19)";
  }
  for (const auto& l : launches) {
    std::unique_ptr<WarmSpare> spare;
    auto c = l ? SplitPythonCommand(l->argv) : std::nullopt;
    if (c) {
      auto s = WarmSpare::Start({c->interpreter, l->env, l->working_dir, l->cpus}, c->target.front(), preload, low);
      if (s.ok()) spare = std::move(s).value();
      else DS_LOG(Warn, Proc) << "python.preload: a warm spare could not start: " << s.status().message();
    }
    spares_.push_back(std::move(spare));
  }
}

void WarmSpares::AddPollFds(std::vector<pollfd>* fds) const {
  for (const auto& s : spares_)
    if (s && s->report_fd() >= 0) fds->push_back({s->report_fd(), POLLIN, 0});
}

bool WarmSpares::OnReadable(int fd) {
  for (size_t i = 0; i < spares_.size(); ++i) {
    WarmSpare* s = spares_[i].get();
    if (!s || s->report_fd() != fd) continue;
    s->OnReadable();
    if (s->state() == SpareState::kReady)
      DS_LOG(Info, Proc) << fmt::format("warm spare for local rank {} ready (pid {}): preload took {:.2f} s, RSS {} MiB",
                                        i, s->pid(), s->import_seconds(), s->rss_kib() >> 10);
    if (s->state() == SpareState::kFailed && off_.empty()) {
      off_ = s->why();
      DS_LOG(Info, Proc) << "python.preload: warm spares off for this job: " << off_;
    }
    return true;
  }
  return false;
}

bool WarmSpares::OnReaped(pid_t pid, int status) {
  for (auto& s : spares_) {
    if (!s || s->pid() != pid) continue;
    s->OnExited(status);
    return true;
  }
  return false;
}

std::set<pid_t> WarmSpares::pids() const {
  std::set<pid_t> out;
  for (const auto& s : spares_)
    if (s && s->state() != SpareState::kEnded) out.insert(s->pid());
  return out;
}

}  // namespace ds
