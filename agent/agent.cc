// RunAgent: dsagent's event loop (poll, on the calling thread). Sources: the
// coordinator socket, a self-pipe fed by the signal handlers (SIGCHLD wakes
// the reaper), the UDP step-heartbeat socket, every worker's stdout/stderr
// pipes and the snapshot keeper's fds. The agent is a child subreaper, so
// orphans of its workers are its children too (reaped like workers).
// Between events it sleeps until AgentControl's next deadline
// (AgentSession::NextDeadline), never on a fixed period.
#include "agent/agent.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "agent/agent_session.h"
#include "agent/workers/descendants.h"
#include "common/log.h"

namespace ds {
namespace {

int g_signal_pipe = -1;

void OnSignal(int sig) {
  int saved = errno;
  uint8_t b = static_cast<uint8_t>(sig);
  (void)!::write(g_signal_pipe, &b, 1);
  errno = saved;
}

// The self-pipe the handlers write each signal's number to; its read end.
Result<UniqueFd> InstallSignals() {
  int sp[2];
  if (::pipe2(sp, O_CLOEXEC | O_NONBLOCK) != 0) return Status::IOError(std::string("pipe: ") + std::strerror(errno));
  g_signal_pipe = sp[1];  // lives as long as the process: a handler may run until exit
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) ::sigaction(s, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  return UniqueFd(sp[0]);
}

// A registered session, or the exit code of why there is none.
struct Joined {
  std::unique_ptr<AgentSession> session;
  int exit_code = 0;
};

// Waits up to a second for a reason to stop trying: a termination signal,
// or (--tree-parent) the parent's connection on stdin ending. The exit code
// then, or nullopt to try again.
std::optional<int> WaitBeforeRetry(const AgentOptions& options, int sig_read) {
  pollfd pfds[2] = {{sig_read, POLLIN, 0}, {STDIN_FILENO, POLLIN, 0}};
  if (::poll(pfds, options.tree_parent >= 0 ? 2 : 1, 1000) <= 0) return std::nullopt;
  uint8_t sig = 0;
  if ((pfds[0].revents & POLLIN) && ::read(sig_read, &sig, 1) == 1 && sig != SIGCHLD) return SignalExitCode(sig);
  char c;
  if (options.tree_parent >= 0 && pfds[1].revents != 0 && ::read(STDIN_FILENO, &c, 1) <= 0) {
    std::fprintf(stderr, "dsagent %s: the connection from node %d's agent ended before this agent registered\n",
                 options.host.c_str(), options.tree_parent);
    return ExitCode(AgentExit::kParentGone);
  }
  return std::nullopt;
}

// Connects and registers. --join-timeout: a coordinator not listening yet
// (the per-node form's node 0 starting late) is tried again each second
// until then; one that refuses this agent's key is not.
Joined Join(const AgentOptions& options, const std::string& secret, int sig_read) {
  const auto join_deadline = std::chrono::steady_clock::now() + Seconds(options.join_timeout);
  for (;;) {
    auto session = std::make_unique<AgentSession>(options, secret);
    Status st = session->Connect();
    if (st.ok()) return {std::move(session), 0};
    const bool refused = st.code() == Status::Code::kPermissionDenied;
    const bool again = (st.code() == Status::Code::kUnavailable || st.code() == Status::Code::kTimeout) &&
                       std::chrono::steady_clock::now() < join_deadline;
    if (!again) {
      std::fprintf(stderr, "dsagent %s: %s%s\n", options.host.c_str(), st.message().c_str(),
                   refused ? " (the coordinator does not accept this agent's key: in the per-node form, "
                             "DSLAUNCH_SECRET_FILE differs from node 0's)"
                           : "");
      return {nullptr, ExitCode(refused ? AgentExit::kRefused : AgentExit::kConnectFailed)};
    }
    // Until then a tree parent's connection (stdin) may end: the launcher
    // then starts this node itself, and this agent must not race it.
    if (auto code = WaitBeforeRetry(options, sig_read)) return {nullptr, *code};
  }
}

// Registered: from now on only the coordinator link counts, not who started us.
void LeaveTreeParent(const AgentOptions& options) {
  if (options.tree_parent < 0) return;
  int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull < 0) return;
  ::dup2(devnull, STDIN_FILENO);
  ::close(devnull);
}

// The event loop, until AgentControl has finished.
void Serve(AgentSession& session, int sig_read) {
  while (!session.Finished()) {
    std::vector<pollfd> fds;
    fds.push_back({sig_read, POLLIN, 0});
    session.AddPollFds(&fds);
    int r = ::poll(fds.data(), fds.size(), session.PollTimeoutMs());
    if (r < 0 && errno != EINTR) break;
    if (fds[0].revents & POLLIN) {
      uint8_t buf[64];
      ssize_t n;
      while ((n = ::read(sig_read, buf, sizeof(buf))) > 0)
        for (ssize_t i = 0; i < n; ++i)
          if (buf[i] != SIGCHLD) session.OnTerminationSignal(buf[i]);
    }
    session.HandlePollResults(fds, 1);
    session.Reap();
    session.CheckTimers();
  }
}

}  // namespace

int RunAgent(const AgentOptions& options, const std::string& secret) {
  LogSetIdentity(options.host.empty() ? "dsagent" : options.host, -1);
  auto sig_read = InstallSignals();
  if (!sig_read.ok()) {
    std::fprintf(stderr, "dsagent: %s\n", sig_read.status().message().c_str());
    return ExitCode(AgentExit::kConnectFailed);
  }
  // Orphans of the job (a worker's daemon) are re-parented to us, not to
  // init, so they stay findable and are killed with the job (descendants.h).
  Status sub = BecomeSubreaper();
  if (!sub.ok()) DS_LOG(Warn, Agent) << sub.message() << "; a worker's daemons may outlive the job";
  Joined joined = Join(options, secret, sig_read->get());
  if (!joined.session) return joined.exit_code;
  LeaveTreeParent(options);
  Serve(*joined.session, sig_read->get());
  KillDescendants();  // whatever path ended the loop: nothing of the job outlives the agent
  // What is still queued (the last WorkerExited, Stopped) gets the time a
  // coordinator may take to read before it counts as lost.
  joined.session->FlushBeforeExit(std::chrono::steady_clock::now() +
                                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                      std::chrono::duration<double>(options.heartbeat_timeout)));
  return joined.session->ExitCode();
}

}  // namespace ds
