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

  AgentSession session(options, secret);
  Status st = session.Connect();
  if (!st.ok()) {
    std::fprintf(stderr, "dsagent %s: %s\n", options.host.c_str(), st.message().c_str());
    return ExitCode(AgentExit::kConnectFailed);
  }
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
