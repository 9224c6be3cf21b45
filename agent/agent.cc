// RunAgent: dsagent's event loop (poll, single thread). Sources: the
// coordinator socket, a self-pipe fed by the signal handlers (SIGCHLD wakes
// the reaper), the UDP step-heartbeat socket and every worker's
// stdout/stderr pipes. The agent is a child subreaper, so orphans of its
// workers are its children too (reaped like workers). Between events it sleeps until the session's next
// deadline (AgentSession::NextDeadline), never on a fixed period.
#include "agent/agent.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "agent/agent_session.h"
#include "agent/descendants.h"
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

void InstallSignals(int write_fd) {
  g_signal_pipe = write_fd;
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) ::sigaction(s, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
}

}  // namespace

int RunAgent(const AgentOptions& options, const std::string& secret) {
  LogSetIdentity(options.host.empty() ? "dsagent" : options.host, -1);
  int sp[2];
  if (::pipe2(sp, O_CLOEXEC | O_NONBLOCK) != 0) {
    std::fprintf(stderr, "dsagent: pipe: %s\n", std::strerror(errno));
    return ExitCode(AgentExit::kConnectFailed);
  }
  UniqueFd sig_read(sp[0]), sig_write(sp[1]);
  InstallSignals(sp[1]);

  // Orphans of the job (a worker's daemon) are re-parented to us, not to
  // init, so they stay findable and are killed with the job (descendants.h).
  Status sub = BecomeSubreaper();
  if (!sub.ok()) DS_LOG(Warn, Agent) << sub.message() << "; a worker's daemons may outlive the job";

  // --join-timeout: a coordinator not listening yet (the per-node form's
  // node 0 starting late) is tried again each second until then; one that
  // refuses this agent's key is not.
  const auto join_deadline = std::chrono::steady_clock::now() + Seconds(options.join_timeout);
  std::unique_ptr<AgentSession> owned;
  for (;;) {
    owned = std::make_unique<AgentSession>(options, secret);
    Status st = owned->Connect();
    if (st.ok()) break;
    const bool refused = st.code() == Status::Code::kPermissionDenied;
    const bool again = (st.code() == Status::Code::kUnavailable || st.code() == Status::Code::kTimeout) &&
                       std::chrono::steady_clock::now() < join_deadline;
    if (!again) {
      std::fprintf(stderr, "dsagent %s: %s%s\n", options.host.c_str(), st.message().c_str(),
                   refused ? " (the coordinator does not accept this agent's key: in the per-node form, "
                             "DSLAUNCH_SECRET_FILE differs from node 0's)"
                           : "");
      return ExitCode(refused ? AgentExit::kRefused : AgentExit::kConnectFailed);
    }
    // Until then a tree parent's connection (stdin) may end: the launcher
    // then starts this node itself, and this agent must not race it.
    pollfd pfds[2] = {{sig_read.get(), POLLIN, 0}, {STDIN_FILENO, POLLIN, 0}};
    if (::poll(pfds, options.tree_parent >= 0 ? 2 : 1, 1000) > 0) {
      uint8_t sig = 0;
      if ((pfds[0].revents & POLLIN) && ::read(sig_read.get(), &sig, 1) == 1 && sig != SIGCHLD)
        return SignalExitCode(sig);
      char c;
      if (options.tree_parent >= 0 && pfds[1].revents != 0 && ::read(STDIN_FILENO, &c, 1) <= 0) {
        std::fprintf(stderr, "dsagent %s: the connection from node %d's agent ended before this agent registered\n",
                     options.host.c_str(), options.tree_parent);
        return ExitCode(AgentExit::kParentGone);
      }
    }
  }
  // Registered: from now on only the coordinator link counts, not who started us.
  if (options.tree_parent >= 0) {
    int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull >= 0) {
      ::dup2(devnull, STDIN_FILENO);
      ::close(devnull);
    }
  }
  AgentSession& session = *owned;
  while (!session.Finished()) {
    std::vector<pollfd> fds;
    fds.push_back({sig_read.get(), POLLIN, 0});
    session.AddPollFds(&fds);
    int r = ::poll(fds.data(), fds.size(), session.PollTimeoutMs());
    if (r < 0 && errno != EINTR) break;
    if (fds[0].revents & POLLIN) {
      uint8_t buf[64];
      ssize_t n;
      while ((n = ::read(sig_read.get(), buf, sizeof(buf))) > 0)
        for (ssize_t i = 0; i < n; ++i)
          if (buf[i] != SIGCHLD) session.OnTerminationSignal(buf[i]);
    }
    session.HandlePollResults(fds, 1);
    session.Reap();
    session.CheckTimers();
  }
  KillDescendants();  // whatever path ended the loop: nothing of the job outlives the agent
  // What is still queued (the last WorkerExited, Stopped) gets the time a
  // coordinator may take to read before it counts as lost.
  session.FlushBeforeExit(std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(options.heartbeat_timeout)));
  return session.ExitCode();
}

}  // namespace ds
