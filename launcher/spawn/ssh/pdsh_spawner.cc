#include "launcher/spawn/ssh/pdsh_spawner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <cmath>
#include <map>
#include <mutex>
#include <thread>

#include "common/env_registry.h"
#include "common/log.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "launcher/spawn/exit_signal.h"
#include "launcher/spawn/ssh/remote_command.h"

namespace ds {
namespace {

std::string Base64(const std::string& in) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    out += {k[v >> 18], k[(v >> 12) & 63], k[(v >> 6) & 63], k[v & 63]};
  }
  if (i + 1 == in.size()) {
    uint32_t v = uint8_t(in[i]) << 16;
    out += {k[v >> 18], k[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += {k[v >> 18], k[(v >> 12) & 63], k[(v >> 6) & 63], '='};
  }
  return out;
}

// One pdsh process and the hosts it serves. The reader thread parses pdsh's
// output ("host: line", "pdsh@x: host: ssh exited with exit code N"); when a
// host ends it raises that host's eventfd (its handle's exit_fd), and when
// pdsh has been reaped, done_event_.
class PdshGroup {
 public:
  // `ended[i]` (from MakeExitEvent) belongs to hosts[i]; `done_event` too.
  PdshGroup(pid_t pid, int in_fd, int out_fd, int err_fd, std::vector<std::string> hosts,
            std::vector<UniqueFd> ended, UniqueFd done_event, double grace)
      : pid_(pid), in_fd_(in_fd), grace_(grace), done_event_(std::move(done_event)) {
    for (size_t i = 0; i < hosts.size(); ++i) hosts_[hosts[i]].ended = std::move(ended[i]);
    reader_ = std::thread([this, out_fd, err_fd] { Read(out_fd, err_fd); });
  }
  ~PdshGroup() { Kill(); }

  bool Running(const std::string& h) {
    std::lock_guard<std::mutex> l(mu_);
    return hosts_[h].running;
  }
  int ExitStatus(const std::string& h) {
    std::lock_guard<std::mutex> l(mu_);
    return hosts_[h].exit;
  }
  // Host `h`'s eventfd; fixed for the group's life, so no lock needed to use it.
  int ExitFd(const std::string& h) {
    std::lock_guard<std::mutex> l(mu_);
    return hosts_[h].ended.get();
  }
  // The group stops when every host has asked to.
  void Stop(const std::string& h) {
    bool stop_all = false;
    int ended_fd = -1;
    {
      std::lock_guard<std::mutex> l(mu_);
      auto& st = hosts_[h];
      if (st.stop_requested) return;
      ended_fd = st.ended.get();
      st.stop_requested = true;
      if (++stops_ < hosts_.size() && !done_.load()) {
        // Others keep running: end only this host's ssh client; its remote
        // supervisor sees EOF and stops the agent, pdsh reports the exit.
        pid_t ssh = SshChildFor(h);
        if (ssh <= 0) {
          DS_LOG(Warn, Ssh) << h << ": pdsh: no ssh client found for this host; it stops with its pdsh group";
          return;
        }
        kill(ssh, SIGTERM);
      } else {
        stop_all = true;
      }
    }
    if (stop_all) {
      Kill();
      return;
    }
    WaitReadable(ended_fd, grace_);  // pdsh reports the host's exit
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
    st.running = false;
    st.exit = exit;
    RaiseExitEvent(st.ended.get());
  }

  // The pid of pdsh's ssh client for host `h` (a child of pdsh whose argv
  // holds `h` as a word), or -1.
  pid_t SshChildFor(const std::string& h) {
    std::error_code ec;
    for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid_) + "/task", ec)) {
      std::ifstream children(task.path() / "children");
      long child;
      while (children >> child) {
        std::ifstream cmdline("/proc/" + std::to_string(child) + "/cmdline");
        std::string arg;
        while (std::getline(cmdline, arg, '\0'))
          if (arg == h) return static_cast<pid_t>(child);
      }
    }
    return -1;
  }

  void Kill() {
    std::call_once(killed_, [this] {
      if (in_fd_ >= 0) close(in_fd_);
      // pdsh and its ssh clients (the remote supervisors then see EOF); not
      // once pdsh has been reaped, when its group id may belong to another.
      if (!done_.load()) kill(-pid_, SIGTERM);
      WaitReadable(done_event_.get(), grace_);
      if (!done_.load()) kill(-pid_, SIGKILL);
      if (reader_.joinable()) reader_.join();
    });
  }

  void Line(bool is_err, const std::string& line) {
    // "pdsh@node: host: ssh exited with exit code N" / "pdsh@node: host: reason"
    if (is_err && StartsWith(line, "pdsh@")) {
      size_t a = line.find(": ");
      size_t b = a == std::string::npos ? a : line.find(": ", a + 2);
      if (b != std::string::npos) {
        std::string host = line.substr(a + 2, b - a - 2), rest = line.substr(b + 2);
        const std::string tag = "ssh exited with exit code ";
        std::lock_guard<std::mutex> l(mu_);
        auto it = hosts_.find(host);
        if (it != hosts_.end() && StartsWith(rest, tag)) {
          MarkEnded(it->second, static_cast<int>(ParseInt(rest.substr(tag.size())).value_or(-1)));
          return;
        }
      }
      DS_LOG(Warn, Ssh) << line;
      return;
    }
    DS_LOG(Warn, Agent) << "[pdsh " << (is_err ? "stderr" : "stdout") << "] " << line;
  }

  void Read(int out_fd, int err_fd) {
    pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
    std::string pending[2];
    int open_fds = 2;
    char buf[4096];
    while (open_fds > 0) {
      if (poll(fds, 2, -1) < 0 && errno != EINTR) break;
      for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        ssize_t n = read(fds[i].fd, buf, sizeof(buf));
        if (n <= 0) {
          close(fds[i].fd);
          fds[i].fd = -1;
          --open_fds;
          continue;
        }
        pending[i].append(buf, n);
        TakeLines(pending[i], [&](const std::string& line) { Line(i == 1, line); });
      }
    }
    int status = 0;
    waitpid(pid_, &status, 0);
    std::lock_guard<std::mutex> l(mu_);
    for (auto& [h, st] : hosts_) {
      if (!st.running) continue;
      // pdsh reports only non-zero exits; a clean pdsh exit means 0.
      MarkEnded(st, (WIFEXITED(status) && !stops_) ? 0 : -1);
    }
    done_.store(true);
    RaiseExitEvent(done_event_.get());
  }

  pid_t pid_;
  int in_fd_;
  double grace_;
  std::mutex mu_;
  std::map<std::string, HostState> hosts_;
  size_t stops_ = 0;
  std::atomic<bool> done_{false};
  UniqueFd done_event_;  // eventfd, raised once pdsh has been reaped
  std::once_flag killed_;
  std::thread reader_;
};

class PdshHandle : public AgentHandle {
 public:
  PdshHandle(std::shared_ptr<PdshGroup> g, std::string host) : group_(std::move(g)), host_(std::move(host)) {}
  ~PdshHandle() override { Terminate(); }
  bool Running() override { return group_->Running(host_); }
  void Terminate() override { group_->Stop(host_); }
  int ExitStatus() override { return group_->ExitStatus(host_); }
  int exit_fd() const override { return group_->ExitFd(host_); }

 private:
  std::shared_ptr<PdshGroup> group_;
  std::string host_;
};

Result<std::shared_ptr<PdshGroup>> Launch(const std::string& pdsh, const std::vector<std::string>& argv,
                                          const std::vector<std::pair<std::string, std::string>>& env_over,
                                          const std::vector<std::string>& hosts, double grace) {
  std::vector<UniqueFd> ended;
  for (size_t i = 0; i < hosts.size(); ++i) {
    DS_ASSIGN_OR_RETURN(UniqueFd e, MakeExitEvent());
    ended.push_back(std::move(e));
  }
  DS_ASSIGN_OR_RETURN(UniqueFd done_event, MakeExitEvent());
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
    return Status::IOError("pdsh: pipe failed");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);  // its own group: Terminate signals pdsh and its ssh clients

  std::map<std::string, std::string> env;
  for (auto& [k, v] : ProcessEnvironment()) env[k] = v;
  for (auto& [k, v] : env_over) env[k] = v;
  const CStringArray envp(std::vector<std::pair<std::string, std::string>>(env.begin(), env.end()));
  const CStringArray args(argv);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, pdsh.c_str(), &fa, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(in[0]);
  close(out[1]);
  close(err[1]);
  if (rc != 0) {
    close(in[1]);
    close(out[0]);
    close(err[0]);
    return Status::IOError("pdsh: cannot run " + pdsh + ": " + std::strerror(rc));
  }
  return std::make_shared<PdshGroup>(pid, in[1], out[0], err[0], hosts, std::move(ended), std::move(done_event), grace);
}

}  // namespace

Result<std::string> FindPdsh(const std::string& name) {
  auto ok = [](const std::string& p) { return access(p.c_str(), X_OK) == 0; };
  if (name.find('/') != std::string::npos) {
    if (ok(name)) return name;
  } else {
    for (const auto& dir : Split(GetAnyEnv("PATH").value_or("/usr/bin:/bin"), ':'))
      if (!dir.empty() && ok(dir + "/" + name)) return dir + "/" + name;
  }
  return Status::NotFound("--launcher pdsh: pdsh is not installed (no '" + name +
                          "' on PATH; apt-get install pdsh), or use --launcher ssh, which needs no pdsh");
}

std::string PdshRemoteCommand(const std::vector<AgentSpec>& specs,
                              const std::vector<std::pair<std::string, std::string>>& env) {
  std::string script = "case %h in ";
  for (const auto& s : specs) {
    script += ShellQuote(s.host) + ") set --";
    for (const auto& a : s.argv) script += " " + ShellQuote(a);
    script += ";; ";
  }
  script += "*) echo \"dslaunch: no agent command for host %h\" >&2; exit 2;; esac; ";
  bool payload = !specs.empty() && !specs[0].stdin_payload.empty();
  script += SupervisorScript(payload ? PayloadFrom::kEnvBase64 : PayloadFrom::kNone);
  return RemoteCommand({"sh", "-c", script}, env);
}

std::string PdshSshArgs(const SshOptions& ssh, std::optional<int> port) {
  std::string a = "-a -x -o BatchMode=yes -o SendEnv=LC_DSLAUNCH_PAYLOAD";
  a += " -o ConnectTimeout=" + std::to_string(std::max(1L, std::lround(std::ceil(ssh.connect_timeout))));
  a += std::string(" -o StrictHostKeyChecking=") + HostKeyPolicyName(ssh.host_key_policy);
  if (!ssh.config_file.empty()) a += " -F " + ShellQuote(ssh.config_file);
  if (port) a += " -p " + std::to_string(*port);
  return a + " -l%u %h";
}

std::vector<Result<std::unique_ptr<AgentHandle>>> PdshSpawner::Start(const std::vector<AgentSpec>& specs) {
  StartSlots slots(specs.size());
  auto pdsh = FindPdsh(options_.pdsh_path);
  // Hosts sharing a port and a payload go in one pdsh run.
  std::map<std::pair<int, std::string>, std::vector<size_t>> groups;
  for (size_t i = 0; i < specs.size(); ++i) {
    const AgentSpec& s = specs[i];
    std::string payload = s.stdin_payload;
    if (!payload.empty() && payload.back() == '\n') payload.pop_back();
    if (!pdsh.ok()) slots[i].emplace(pdsh.status().Prefixed(s.host));
    else if (s.argv.empty()) slots[i].emplace(Status::InvalidArgument(s.host + ": empty agent command"));
    else if (payload.find('\n') != std::string::npos)
      slots[i].emplace(Status::InvalidArgument(s.host + ": the agent's stdin payload must be one line"));
    else groups[{s.ssh_port.value_or(options_.ssh.default_port.value_or(0)), payload}].push_back(i);
  }
  const std::vector<std::pair<std::string, std::string>> fwd = ForwardedEnv(options_.ssh);
  for (auto& [key, idx] : groups) {
    std::vector<AgentSpec> g;
    std::string wlist;
    std::vector<std::string> hosts;
    for (size_t i : idx) {
      g.push_back(specs[i]);
      wlist += (wlist.empty() ? "" : ",") + (specs[i].user.empty() ? "" : specs[i].user + "@") + specs[i].host;
      hosts.push_back(specs[i].host);
    }
    std::optional<int> port = key.first ? std::optional<int>(key.first) : std::nullopt;
    std::vector<std::string> argv = {*pdsh, "-S", "-f", std::to_string(std::max(1, options_.ssh.fanout)),
                                     "-t", std::to_string(std::max(1L, std::lround(std::ceil(options_.ssh.connect_timeout)))),
                                     "-w", wlist};
    argv.insert(argv.end(), options_.extra_args.begin(), options_.extra_args.end());
    argv.push_back(PdshRemoteCommand(g, fwd));
    std::vector<std::pair<std::string, std::string>> env = {
        {"PDSH_RCMD_TYPE", "ssh"}, {"PDSH_SSH_ARGS", PdshSshArgs(options_.ssh, port)}};
    if (!key.second.empty()) env.emplace_back("LC_DSLAUNCH_PAYLOAD", Base64(key.second + "\n"));
    DS_LOG(Info, Ssh) << "pdsh -w " << wlist << " (PDSH_SSH_ARGS=" << env[1].second << ")";
    auto group = Launch(*pdsh, argv, env, hosts, options_.ssh.stop_grace);
    for (size_t i : idx) {
      if (!group.ok()) slots[i].emplace(group.status().Prefixed(specs[i].host));
      else slots[i].emplace(std::unique_ptr<AgentHandle>(std::make_unique<PdshHandle>(*group, specs[i].host)));
    }
  }
  return TakeStartResults(slots);
}

std::unique_ptr<Spawner> MakePdshSpawner(const PdshOptions& options) {
  return std::make_unique<PdshSpawner>(options);
}

}  // namespace ds
