#include "agent/tree/child_agents.h"

#include <signal.h>
#include <sys/wait.h>

#include <fmt/format.h>

#include "common/env_registry.h"
#include "common/log.h"
#include "common/strings.h"

namespace ds {

ChildAgents::~ChildAgents() {
  for (Child& c : children_) c.proc->SignalGroup(SIGKILL);
}

std::vector<msg::AgentEnded> ChildAgents::Start(const msg::StartAgents& m) {
  std::vector<msg::AgentEnded> failed;
  for (const msg::AgentCommand& a : m.agents) {
    WorkerLaunch launch;
    launch.argv = a.argv;
    for (const auto& kv : ProcessEnvironment())
      if (kv.first != "DSLAUNCH_SECRET_FD") launch.env.push_back(kv);
    launch.stdin_line = a.token;
    launch.raw_lines = true;  // every byte reaches the log, escaped: a '\r' hides nothing there
    auto proc = WorkerProcess::Start(launch);
    if (!proc.ok()) {
      failed.push_back({a.node, 127, 0, fmt::format("cannot start '{}': {}", a.argv.empty() ? "" : a.argv[0],
                                                     proc.status().message())});
      continue;
    }
    DS_LOG(Info, Agent) << "starting the agent of node " << a.node << " (" << a.host << "), pid "
                        << (*proc)->pid();
    children_.push_back({a.node, a.host, std::move(proc).value(), ""});
  }
  return failed;
}

std::set<pid_t> ChildAgents::pids() const {
  std::set<pid_t> out;
  for (const Child& c : children_) out.insert(c.proc->pid());
  return out;
}

void ChildAgents::AddPollFds(std::vector<pollfd>* fds) const {
  for (const Child& c : children_) {
    if (c.proc->stdout_fd() >= 0) fds->push_back({c.proc->stdout_fd(), POLLIN, 0});
    if (c.proc->stderr_fd() >= 0) fds->push_back({c.proc->stderr_fd(), POLLIN, 0});
  }
}

void ChildAgents::Relay(Child& c, int stream, std::string line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();  // ssh ends its own messages with CRLF
  DS_LOG(Warn, Agent) << c.host << " [agent " << (stream == 1 ? "stdout" : "stderr") << "] " << Printable(line);
  if (stream != 2) return;
  c.stderr_tail += line + "\n";
  if (c.stderr_tail.size() > msg::kMaxAgentEndedReason)
    c.stderr_tail.erase(0, c.stderr_tail.size() - msg::kMaxAgentEndedReason);
}

bool ChildAgents::OnReadable(int fd) {
  for (Child& c : children_) {
    if (fd != c.proc->stdout_fd() && fd != c.proc->stderr_fd()) continue;
    c.proc->ReadPipe(fd, [&](int stream, const std::string& line) { Relay(c, stream, line); });
    return true;
  }
  return false;
}

std::optional<msg::AgentEnded> ChildAgents::OnExited(pid_t pid, int status) {
  for (auto it = children_.begin(); it != children_.end(); ++it) {
    if (it->proc->pid() != pid) continue;
    Child& c = *it;
    c.proc->exited = true;
    c.proc->DrainAndClose([&](int stream, const std::string& line) { Relay(c, stream, line); });
    msg::AgentEnded e{c.node, WIFEXITED(status) ? WEXITSTATUS(status) : -1, WIFSIGNALED(status) ? WTERMSIG(status) : 0,
                      c.stderr_tail};
    while (!e.reason.empty() && e.reason.back() == '\n') e.reason.pop_back();
    DS_LOG(Info, Agent) << "the agent command of node " << c.node << " (" << c.host << ") ended (code "
                        << e.exit_code << ", signal " << e.signal << ")";
    children_.erase(it);
    return e;
  }
  return std::nullopt;
}

}  // namespace ds
