// AgentSession, second half: reaping, stopping, hang detection, losing the
// coordinator and quitting (agent_session.h).
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "agent/agent_session.h"
#include "agent/descendants.h"
#include "common/log.h"
#include "wire/hmac_auth.h"
#include "wire/step_heartbeat.h"

namespace ds {

bool AgentSession::AllExited() const {
  for (const auto& s : slots_)
    if (s.proc && !s.proc->exited) return false;
  return true;
}

void AgentSession::BeginStop(Duration grace) {
  bool any = false;
  for (auto& s : slots_) {
    if (s.proc && !s.proc->exited) {
      s.proc->SignalGroup(SIGTERM);
      any = true;
    }
  }
  if (any && !kill_armed_) {
    kill_armed_ = true;
    kill_at_ = clock_.Now() + grace;
  }
  CheckTimers();  // nothing to wait for -> Stopped / finish right away
}

void AgentSession::Lost(const std::string& reason) {
  if (conn_.get() < 0) return;
  conn_.Reset();
  outbox_.Clear();
  if (quitting_ && exit_code_ == ds::ExitCode(AgentExit::kShutdown)) return;  // told to shut down: the close is expected
  std::fprintf(stderr, "dsagent %s: lost the coordinator (%s); killing my workers\n", opt_.host.c_str(),
               reason.c_str());
  Quit(ds::ExitCode(AgentExit::kLostCoordinator), reason);
}

void AgentSession::Quit(int exit_code, const std::string& why) {
  if (quitting_) return;
  DS_LOG(Info, Agent) << "quitting: " << why;
  quitting_ = true;
  exit_code_ = exit_code;
  held_port_.Reset();
  BeginStop(stop_grace_);
}

void AgentSession::OnTerminationSignal(int sig) {
  if (quitting_) {  // second signal: no more grace
    for (auto& s : slots_)
      if (s.proc && !s.proc->exited) s.proc->SignalGroup(SIGKILL);
    return;
  }
  Quit(SignalExitCode(sig), fmt::format("signal {}", sig));
}

void AgentSession::Reap() {
  while (true) {
    // Peek first (WNOWAIT): while the leader is an unreaped zombie its pid
    // cannot be reused, so signalling its group can only hit this worker's
    // leftovers, never someone else's processes.
    siginfo_t info{};
    if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) return;
    pid_t pid = info.si_pid;
    for (auto& s : slots_)
      if (s.proc && s.proc->pid() == pid) s.proc->SignalGroup(SIGKILL);  // what it left in its group
    int status = 0;
    if (::waitpid(pid, &status, 0) != pid) return;
    if (auto ended = children_ ? children_->OnExited(pid, status) : std::nullopt)
      Send(wire::MsgType::kAgentEnded, ended->Encode());
    for (auto& s : slots_) {
      if (!s.proc || s.proc->pid() != pid) continue;
      s.proc->exited = true;
      if (WIFSIGNALED(status)) s.proc->term_signal = WTERMSIG(status);
      else s.proc->exit_code = WEXITSTATUS(status);
      s.proc->DrainAndClose([&](int stream, const std::string& line) { SendLine(s, stream, line); });
      if (!s.reported) {
        s.reported = true;
        msg::WorkerExited e;
        e.generation = generation_;
        e.rank = s.rank;
        e.pid = pid;
        e.exit_code = s.proc->exit_code;
        e.signal = s.proc->term_signal;
        e.hung = s.hung ? 1 : 0;
        auto err = TakeErrorFile(s);  // removes the file either way
        if (err && (e.exit_code != 0 || e.signal != 0)) {
          e.error_message = std::move(err->message);
          e.error_trace = std::move(err->traceback);
        }
        Send(wire::MsgType::kWorkerExited, e.Encode());
      }
      DS_LOG(Info, Proc) << "rank " << s.rank << " pid " << pid << " exited (code " << s.proc->exit_code
                         << ", signal " << s.proc->term_signal << ")";
      break;
    }
  }
}

std::optional<TorchError> AgentSession::TakeErrorFile(const Slot& s) {
  if (s.error_file.empty()) return std::nullopt;
  auto e = ReadWorkerErrorFile(s.error_file, ::geteuid());
  ::unlink(s.error_file.c_str());  // read once; a restart's worker gets a fresh name anyway
  if (!e) return std::nullopt;
  return BoundForWire(std::move(*e));
}

void AgentSession::ReadHeartbeats() {
  uint8_t buf[kStepBeatSize + 1];  // one more: an oversized datagram shows as too long
  while (true) {
    ssize_t n = ::recv(heartbeat_.get(), buf, sizeof(buf), MSG_DONTWAIT);
    if (n < 0) return;
    auto beat = DecodeStepBeat(buf, static_cast<size_t>(n));
    if (!beat) continue;
    for (auto& s : slots_) {
      // A beat counts only with that worker's own token (constant-time
      // compare): anyone else who can reach this port can neither arm a
      // healthy worker's hang check nor keep a hung one alive.
      if (s.rank != beat->rank || !s.proc || s.beat_token.size() != kStepBeatTokenChars) continue;
      if (!MacEquals(Bytes(s.beat_token.begin(), s.beat_token.end()), Bytes(beat->token.begin(), beat->token.end()))) {
        DS_LOG(Debug, Hb) << "ignored a step heartbeat for rank " << beat->rank << " with a wrong token";
        continue;
      }
      s.beaten = true;
      s.last_beat = clock_.Now();
    }
  }
}

std::optional<TimePoint> AgentSession::NextDeadline() const {
  std::optional<TimePoint> next;
  auto consider = [&](TimePoint t) {
    if (!next || t < *next) next = t;
  };
  if (kill_armed_) consider(kill_at_);
  if (hang_timeout_.count() > 0 && !stopping_ && !quitting_) {
    for (const auto& s : slots_)
      if (s.proc && !s.proc->exited && s.beaten && !s.hung) consider(s.last_beat + hang_timeout_);
  }
  if (WaitingForChildren()) consider(children_until_);
  if (conn_.get() >= 0) {
    consider(last_recv_ + Seconds(opt_.heartbeat_timeout));
    consider(last_ping_ + Seconds(opt_.heartbeat_interval));
  }
  return next;
}

void AgentSession::CheckTimers() {
  if (!write_error_.empty()) Lost(write_error_);
  auto now = clock_.Now();
  if (kill_armed_ && now >= kill_at_) {
    kill_armed_ = false;
    for (auto& s : slots_)
      if (s.proc && !s.proc->exited) s.proc->SignalGroup(SIGKILL);
  }
  if (hang_timeout_.count() > 0 && !stopping_ && !quitting_) {
    for (auto& s : slots_) {
      if (!s.proc || s.proc->exited || !s.beaten || s.hung || now - s.last_beat < hang_timeout_) continue;
      s.hung = true;
      SendLine(s, 2, fmt::format("dsagent: rank {} made no step for {} ms; killing it", s.rank,
                                 std::chrono::duration_cast<std::chrono::milliseconds>(hang_timeout_).count()));
      s.proc->SignalGroup(SIGKILL);
    }
  }
  if (conn_.get() >= 0) {
    if (now - last_recv_ > Seconds(opt_.heartbeat_timeout)) {
      Lost(fmt::format("no message for {}s", opt_.heartbeat_timeout));
    } else if (now - last_ping_ >= Seconds(opt_.heartbeat_interval)) {
      last_ping_ = now;
      Send(wire::MsgType::kPing, msg::Ping{}.Encode());
    }
  }
  if (!AllExited()) return;
  kill_armed_ = false;
  if (stopping_ || quitting_) {
    // The generation is over: its leftovers (daemons, setsid'd or double-forked
    // children outside the workers' groups) go too, before Stopped says so.
    int n = KillDescendants(ChildPids());
    if (n > 0) DS_LOG(Info, Proc) << "killed " << n << " leftover process(es) of generation " << generation_;
  }
  if (stopping_) {
    stopping_ = false;
    slots_.clear();
    Send(wire::MsgType::kStopped, msg::Stopped{generation_}.Encode());
  }
  if (quitting_ && snapshots_) {  // the last handoffs reach the node's disk before the agent goes
    snapshots_->OnInotify();
    snapshots_->Drain();
    SendSnapshotMessages();
  }
  if (quitting_ && !WaitingForChildren()) finished_ = true;
}

}  // namespace ds
