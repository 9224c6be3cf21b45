#include "launcher/spawn/ssh/ssh_spawner.h"

#include <poll.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <optional>
#include <thread>

#include <libssh/libssh.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/strings.h"
#include "common/unique_fd.h"
#include "launcher/spawn/exit_signal.h"
#include "launcher/spawn/parallel_for.h"
#include "launcher/spawn/ssh/remote_command.h"
#include "launcher/spawn/ssh/ship_agent.h"

namespace ds {
namespace {

// Splits complete lines off `pending` and logs them as the agent's output.
void RelayLines(const std::string& host, const char* stream, std::string& pending) {
  TakeLines(pending, [&](const std::string& line) {
    DS_LOG(Warn, Agent) << host << " [agent " << stream << "] " << line;
  });
  if (pending.size() > 64 * 1024) {  // a line without end: flush it anyway
    DS_LOG(Warn, Agent) << host << " [agent " << stream << "] " << pending;
    pending.clear();
  }
}

// An agent behind one SSH channel. A thread of its own pumps the channel
// (relaying output) until the agent ends or Terminate() asks it to stop; only
// that thread touches the libssh session after construction. It sleeps in
// poll on the session's socket and a wake-up eventfd that Terminate() rings,
// so an idle agent costs nothing. When it sees the end it clears running_
// and then sets the eventfd that is exit_fd().
class SshAgentHandle : public AgentHandle {
 public:
  SshAgentHandle(std::unique_ptr<SshSession> session, ssh_channel channel, std::string shipped, double stop_grace,
                 UniqueFd exit_event, UniqueFd wake)
      : session_(std::move(session)),
        channel_(channel),
        shipped_(std::move(shipped)),
        stop_grace_(stop_grace),
        exit_event_(std::move(exit_event)),
        wake_(std::move(wake)) {
    thread_ = std::thread([this] { Pump(); });
  }
  ~SshAgentHandle() override { Terminate(); }

  bool Running() override { return running_.load(); }
  void Terminate() override {
    stop_.store(true);
    RaiseExitEvent(wake_.get());
    if (thread_.joinable()) thread_.join();
  }
  int ExitStatus() override { return exit_status_.load(); }
  int exit_fd() const override { return exit_event_.get(); }

 private:
  void Pump();
  bool Drain();  // relays what has arrived; false when the channel has ended
  // Sleeps until the socket has bytes, Terminate() rings (with `wakeable`),
  // or `timeout_ms` (-1: no limit) passes.
  void Wait(int timeout_ms, bool wakeable);
  void Cleanup();

  std::unique_ptr<SshSession> session_;
  ssh_channel channel_;  // owned; closed and freed by Cleanup() on the pump thread
  std::string shipped_;  // remote agent path when --ship-agent, else ""
  double stop_grace_;
  UniqueFd exit_event_;  // eventfd, set once the agent has ended
  UniqueFd wake_;        // eventfd, set by Terminate()
  std::atomic<bool> running_{true};
  std::atomic<bool> stop_{false};
  std::atomic<int> exit_status_{-1};
  std::string out_, err_;
  std::thread thread_;
};

// Non-blocking reads process every complete packet the socket holds, so once
// both streams read empty, more can only come with new bytes on the socket.
bool SshAgentHandle::Drain() {
  char buf[4096];
  int n = 0, e = 0;
  for (bool more = true; more;) {
    more = false;
    if ((n = ssh_channel_read_nonblocking(channel_, buf, sizeof(buf), 0)) > 0) {
      out_.append(buf, n);
      RelayLines(session_->host(), "stdout", out_);
      more = true;
    }
    if ((e = ssh_channel_read_nonblocking(channel_, buf, sizeof(buf), 1)) > 0) {
      err_.append(buf, e);
      RelayLines(session_->host(), "stderr", err_);
      more = true;
    }
  }
  if (n == SSH_ERROR || e == SSH_ERROR) {
    DS_LOG(Warn, Ssh) << session_->host() << ": ssh connection lost: " << ssh_get_error(session_->raw());
    return false;
  }
  if (ssh_channel_is_eof(channel_)) {
    exit_status_.store(ssh_channel_get_exit_status(channel_));
    return false;
  }
  return true;
}

void SshAgentHandle::Wait(int timeout_ms, bool wakeable) {
  pollfd fds[2] = {{ssh_get_fd(session_->raw()), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
  int r;
  do r = ::poll(fds, wakeable ? 2 : 1, timeout_ms);
  while (r < 0 && errno == EINTR);
}

void SshAgentHandle::Pump() {
  bool alive = Drain();
  while (alive && !stop_.load()) {
    Wait(-1, /*wakeable=*/true);
    alive = Drain();
  }
  if (alive) {
    // Terminate(): TERM to the agent (it stops its workers), then give it
    // stop_grace to finish before the channel is closed under it.
    DS_LOG(Info, Ssh) << session_->host() << ": stopping agent";
    ssh_channel_request_send_signal(channel_, "TERM");  // refused by sshd for root logins
    ssh_channel_send_eof(channel_);                      // the wrapper then TERMs the agent
    const auto deadline = std::chrono::steady_clock::now() + Seconds(stop_grace_);
    while (alive && std::chrono::steady_clock::now() < deadline) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      Wait(static_cast<int>(left.count()) + 1, /*wakeable=*/false);
      alive = Drain();
    }
  }
  running_.store(false);
  RaiseExitEvent(exit_event_.get());
  Cleanup();
}

void SshAgentHandle::Cleanup() {
  if (!out_.empty()) RelayLines(session_->host(), "stdout", out_ += "\n");
  if (!err_.empty()) RelayLines(session_->host(), "stderr", err_ += "\n");
  ssh_channel_close(channel_);
  ssh_channel_free(channel_);
  channel_ = nullptr;
  if (!shipped_.empty() && ssh_is_connected(session_->raw())) {
    Status st = RemoveShippedAgent(*session_, shipped_);
    if (!st.ok()) DS_LOG(Warn, Ssh) << st.message();
  }
  session_.reset();  // disconnect
}

std::string JobIdOf(const AgentSpec& spec) {
  for (size_t i = 0; i + 1 < spec.argv.size(); ++i)
    if (spec.argv[i] == "--job-id") return spec.argv[i + 1];
  return "job";
}

}  // namespace

Result<std::unique_ptr<AgentHandle>> SshSpawner::StartOne(const AgentSpec& spec) {
  if (spec.argv.empty()) return Status::InvalidArgument(spec.host + ": empty agent command");
  std::string payload = spec.stdin_payload;
  if (!payload.empty() && payload.back() != '\n') payload += '\n';
  if (!payload.empty() && payload.find('\n') != payload.size() - 1)
    return Status::InvalidArgument(spec.host + ": the agent's stdin payload must be one line");
  auto exit_event = MakeExitEvent();
  if (!exit_event.ok()) return exit_event.status().Prefixed(spec.host);
  auto wake = MakeExitEvent();
  if (!wake.ok()) return wake.status().Prefixed(spec.host);
  DS_ASSIGN_OR_RETURN(std::unique_ptr<SshSession> session,
                      SshSession::Connect(SshTarget{spec.host, spec.user, spec.ssh_port}, options_));
  std::vector<std::string> argv = spec.argv;
  std::string shipped;
  if (options_.ship_agent) {
    DS_ASSIGN_OR_RETURN(shipped, ShipAgent(*session, argv[0], JobIdOf(spec)));
    argv[0] = shipped;
  }
  auto fail = [&](const std::string& what) {
    Status st = Status::IOError(spec.host + ": " + what + ": " + ssh_get_error(session->raw()));
    if (!shipped.empty()) (void)RemoveShippedAgent(*session, shipped);
    return st;
  };
  ssh_channel ch = ssh_channel_new(session->raw());
  if (ch == nullptr) return fail("cannot open a channel");
  const std::string cmd = SupervisedCommand(argv, ForwardedEnv(options_), !payload.empty(), options_.outlive_session);
  if (ssh_channel_open_session(ch) != SSH_OK || ssh_channel_request_exec(ch, cmd.c_str()) != SSH_OK) {
    ssh_channel_free(ch);
    return fail("cannot start the agent");
  }
  if (!payload.empty() && ssh_channel_write(ch, payload.data(), static_cast<uint32_t>(payload.size())) < 0) {
    ssh_channel_close(ch);
    ssh_channel_free(ch);
    return fail("cannot write the agent's stdin");
  }
  // No EOF now: the wrapper treats EOF on stdin as "stop the agent".
  DS_LOG(Info, Ssh) << spec.host << " (" << session->peer_address() << "): started " << cmd;
  return std::unique_ptr<AgentHandle>(
      std::make_unique<SshAgentHandle>(std::move(session), ch, shipped, options_.stop_grace,
                                       std::move(exit_event).value(), std::move(wake).value()));
}

std::vector<Result<std::unique_ptr<AgentHandle>>> SshSpawner::Start(const std::vector<AgentSpec>& specs) {
  StartSlots slots(specs.size());
  ParallelFor(specs.size(), options_.fanout, [&](size_t i) { slots[i].emplace(StartOne(specs[i])); });
  return TakeStartResults(slots);
}

std::unique_ptr<Spawner> MakeSshSpawner(const SshOptions& options) {
  return std::make_unique<SshSpawner>(options);
}

}  // namespace ds
