#include "launcher/spawn/tool_group.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "common/env_registry.h"
#include "common/log.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "launcher/spawn/exit_signal.h"

namespace ds {
namespace {

// The running tool and its hosts' states; shared by the handles.
class ToolGroup {
 public:
  ToolGroup(ToolGroupSpec spec, pid_t pid, int in_fd, int out_fd, int err_fd, std::vector<UniqueFd> ended,
            UniqueFd done_event)
      : spec_(std::move(spec)), pid_(pid), in_fd_(in_fd), done_event_(std::move(done_event)) {
    for (size_t i = 0; i < spec_.hosts.size(); ++i) hosts_[spec_.hosts[i]].ended = std::move(ended[i]);
    reader_ = std::thread([this, out_fd, err_fd] { Read(out_fd, err_fd); });
  }
  ~ToolGroup() { Kill(); }

  bool Running(const std::string& h) {
    std::lock_guard<std::mutex> l(mu_);
    return hosts_[h].running;
  }
  int ExitStatus(const std::string& h) {
    std::lock_guard<std::mutex> l(mu_);
    return hosts_[h].exit;
  }
  // Fixed for the group's life: no lock needed to use it.
  int ExitFd(const std::string& h) {
    std::lock_guard<std::mutex> l(mu_);
    return hosts_[h].ended.get();
  }

  // The group stops when every host has asked to.
  void Stop(const std::string& h) {
    int ended_fd = -1;
    {
      std::lock_guard<std::mutex> l(mu_);
      HostState& st = hosts_[h];
      if (st.stop_requested) return;
      st.stop_requested = true;
      ended_fd = st.ended.get();
      const bool last = ++stops_ >= hosts_.size() || done_.load();
      if (!last && st.running) {
        if (!spec_.stop_host || !spec_.stop_host(pid_, h)) {
          DS_LOG(Warn, Agent) << h << ": " << spec_.tool << " cannot stop this host alone; it stops with the rest";
          return;
        }
      }
      if (last) ended_fd = -1;
    }
    if (ended_fd < 0) Kill();
    else WaitReadable(ended_fd, spec_.grace);  // the tool reports the host's end
  }

 private:
  struct HostState {
    bool running = true;
    int exit = -1;
    bool stop_requested = false;
    UniqueFd ended;  // eventfd, raised when running turns false
  };

  // Under mu_.
  static void MarkEnded(HostState& st, int exit) {
    if (!st.running) return;
    st.running = false;
    st.exit = exit;
    RaiseExitEvent(st.ended.get());
  }

  void Kill() {
    std::call_once(killed_, [this] {
      if (in_fd_ >= 0) ::close(in_fd_);
      // Not once the tool has been reaped: its group id may belong to another.
      if (!done_.load()) ::kill(-pid_, SIGTERM);
      WaitReadable(done_event_.get(), spec_.grace);
      if (!done_.load()) ::kill(-pid_, SIGKILL);
      if (reader_.joinable()) reader_.join();
    });
  }

  void Line(bool is_err, const std::string& line) {
    std::string host;
    int exit = -1;
    if (spec_.host_ended && spec_.host_ended(is_err, line, &host, &exit)) {
      std::lock_guard<std::mutex> l(mu_);
      auto it = hosts_.find(host);
      if (it != hosts_.end()) {
        MarkEnded(it->second, exit);
        return;
      }
    }
    if (spec_.benign && spec_.benign(line))
      DS_LOG(Debug, Agent) << "[" << spec_.tool << "] " << line;
    else
      DS_LOG(Warn, Agent) << "[" << spec_.tool << (is_err ? " stderr] " : " stdout] ") << line;
  }

  void Read(int out_fd, int err_fd) {
    pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
    std::string pending[2];
    int open_fds = 2;
    char buf[4096];
    while (open_fds > 0) {
      if (::poll(fds, 2, -1) < 0 && errno != EINTR) break;
      for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        const ssize_t n = ::read(fds[i].fd, buf, sizeof(buf));
        if (n <= 0) {
          ::close(fds[i].fd);
          fds[i].fd = -1;
          --open_fds;
          continue;
        }
        pending[i].append(buf, n);
        TakeLines(pending[i], [&](const std::string& line) { Line(i == 1, line); });
      }
    }
    int status = 0;
    ::waitpid(pid_, &status, 0);
    std::lock_guard<std::mutex> l(mu_);
    // A tool that reports hosts reports the failed ones: the rest of a run
    // that ended by itself exited 0. One that reports none (mpirun) gives
    // each host its own exit status.
    int rest = -1;
    if (WIFEXITED(status) && stops_ == 0) rest = spec_.host_ended ? 0 : WEXITSTATUS(status);
    for (auto& [h, st] : hosts_) MarkEnded(st, rest);
    done_.store(true);
    RaiseExitEvent(done_event_.get());
  }

  const ToolGroupSpec spec_;
  pid_t pid_;
  int in_fd_;
  std::mutex mu_;
  std::map<std::string, HostState> hosts_;
  size_t stops_ = 0;
  std::atomic<bool> done_{false};
  UniqueFd done_event_;  // eventfd, raised once the tool has been reaped
  std::once_flag killed_;
  std::thread reader_;
};

class ToolHandle final : public AgentHandle {
 public:
  ToolHandle(std::shared_ptr<ToolGroup> g, std::string host) : group_(std::move(g)), host_(std::move(host)) {}
  ~ToolHandle() override { Terminate(); }
  bool Running() override { return group_->Running(host_); }
  void Terminate() override { group_->Stop(host_); }
  int ExitStatus() override { return group_->ExitStatus(host_); }
  int exit_fd() const override { return group_->ExitFd(host_); }

 private:
  std::shared_ptr<ToolGroup> group_;
  std::string host_;
};

}  // namespace

Result<std::string> FindExecutable(const std::string& name) {
  auto ok = [](const std::string& p) { return ::access(p.c_str(), X_OK) == 0; };
  if (name.find('/') != std::string::npos) {
    if (ok(name)) return name;
  } else {
    for (const auto& dir : Split(GetAnyEnv("PATH").value_or("/usr/bin:/bin"), ':'))
      if (!dir.empty() && ok(dir + "/" + name)) return dir + "/" + name;
  }
  return Status::NotFound(fmt::format("'{}' not found (PATH)", name));
}

Result<std::vector<std::unique_ptr<AgentHandle>>> StartToolGroup(ToolGroupSpec spec) {
  std::vector<UniqueFd> ended;
  for (size_t i = 0; i < spec.hosts.size(); ++i) {
    DS_ASSIGN_OR_RETURN(UniqueFd e, MakeExitEvent());
    ended.push_back(std::move(e));
  }
  DS_ASSIGN_OR_RETURN(UniqueFd done_event, MakeExitEvent());
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return Status::IOError(spec.tool + ": pipe: " + std::strerror(errno));
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]), ::close(in[1]);
    return Status::IOError(spec.tool + ": pipe: " + std::strerror(errno));
  }
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(in[0]), ::close(in[1]), ::close(out[0]), ::close(out[1]);
    return Status::IOError(spec.tool + ": pipe: " + std::strerror(errno));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  // The tool gets its three pipes, nothing else of dslaunch's (not run at all otherwise).
  const int closing = AddCloseAboveStderr(&fa);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);  // its own group: Kill() signals the tool and its helpers

  std::map<std::string, std::string> env;
  for (auto& [k, v] : ProcessEnvironment()) env[k] = v;
  for (auto& [k, v] : spec.env) env[k] = v;
  const CStringArray envp(std::vector<std::pair<std::string, std::string>>(env.begin(), env.end()));
  const CStringArray args(spec.argv);
  pid_t pid = -1;
  const int rc = closing != 0 ? closing : ::posix_spawn(&pid, spec.path.c_str(), &fa, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  if (rc != 0) {
    ::close(in[1]), ::close(out[0]), ::close(err[0]);
    return Status::IOError(fmt::format("{}: cannot run {}: {}", spec.tool, spec.path, std::strerror(rc)));
  }
  int in_fd = in[1];
  if (spec.stdin_data) {
    // A one-line payload is below PIPE_BUF: never blocks; EPIPE ignored (dslaunch ignores SIGPIPE).
    (void)!::write(in_fd, spec.stdin_data->data(), spec.stdin_data->size());
    ::close(in_fd);
    in_fd = -1;
  }
  std::vector<std::string> hosts = spec.hosts;
  auto group = std::make_shared<ToolGroup>(std::move(spec), pid, in_fd, out[0], err[0], std::move(ended),
                                           std::move(done_event));
  std::vector<std::unique_ptr<AgentHandle>> handles;
  for (const std::string& h : hosts) handles.push_back(std::make_unique<ToolHandle>(group, h));
  return handles;
}

std::vector<Result<std::unique_ptr<AgentHandle>>> StartForSpecs(const std::vector<AgentSpec>& specs,
                                                                Result<ToolGroupSpec> tool) {
  Result<std::vector<std::unique_ptr<AgentHandle>>> handles =
      tool.ok() ? StartToolGroup(std::move(tool).value()) : tool.status();
  std::vector<Result<std::unique_ptr<AgentHandle>>> out;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (!handles.ok()) out.emplace_back(handles.status().Prefixed(specs[i].host));
    else out.emplace_back(std::move((*handles)[i]));
  }
  return out;
}

}  // namespace ds
