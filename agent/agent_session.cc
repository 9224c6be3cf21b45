#include "agent/agent_session.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "agent/node_facts.h"
#include "wire/port_hold.h"
#include "common/log.h"
#include "common/netif.h"
#include "wire/attach_file.h"
#include "wire/hmac_auth.h"
#include "wire/step_heartbeat.h"

namespace ds {

using std::chrono::milliseconds;

int PollTimeoutUntil(std::optional<TimePoint> deadline, TimePoint now) {
  if (!deadline) return -1;
  if (*deadline <= now) return 0;
  auto ms = std::chrono::ceil<milliseconds>(*deadline - now).count();
  return static_cast<int>(std::min<decltype(ms)>(ms, 24 * 3600 * 1000));
}

AgentSession::AgentSession(AgentOptions options, std::string secret, const Clock& clock)
    : opt_(std::move(options)), secret_(std::move(secret)), clock_(clock) {}

AgentSession::~AgentSession() {
  if (attach_dir_) RemoveAttachFile(*attach_dir_, opt_.job_id, static_cast<uint32_t>(opt_.node_index));
}

Status AgentSession::Connect() {
  Deadline deadline = std::chrono::steady_clock::now() + Seconds(opt_.connect_timeout);  // real I/O time
  DS_ASSIGN_OR_RETURN(auto hp, SplitHostPort(opt_.coordinator));
  DS_ASSIGN_OR_RETURN(facts_, GatherNodeFacts(opt_.node_index, opt_.host, opt_.bind_addr, hp.first));
  const msg::Register& facts = facts_;
  // The step heartbeats' socket first: its address is part of the Register.
  DS_ASSIGN_OR_RETURN(auto hb, BindUdp(facts.addr));
  heartbeat_ = std::move(hb.first);
  facts_.heartbeat_addr = hb.second;
  DS_RETURN_IF_ERROR(ConnectAndRegister(opt_.coordinator, deadline));
  workers_ = std::make_unique<ProcessLauncher>(facts.host, !opt_.step_identity.empty(), children_);
  snapshots_ = std::make_unique<RealNodeSnapshots>(
      SnapshotKeeper::Identity{opt_.job_id, facts.host, static_cast<uint32_t>(opt_.node_index), facts.addr});
  AgentControlOptions co{facts.host, opt_.heartbeat_interval, opt_.heartbeat_timeout, opt_.coordinator_grace};
  stacks_ = std::make_unique<StackDumper>();
  control_ = std::make_unique<AgentControl>(co, AgentSeams{*this, *workers_, *snapshots_, children_, stacks_.get()},
                                            clock_);
  DS_LOG(Info, Agent) << "registered as node " << opt_.node_index << " (" << facts.addr << ")";
  Result<PrivateDir> dir = OpenPrivateDir();
  if (dir.ok()) attach_dir_ = std::move(dir).value();
  else DS_LOG(Warn, Agent) << "no attach file (dslaunch attach finds the job elsewhere): " << dir.status().message();
  KeepAttachFile();
  return Status::OK();
}

Status AgentSession::ConnectAndRegister(const std::string& address, Deadline deadline) {
  DS_ASSIGN_OR_RETURN(UniqueFd conn, ConnectTcp(address, opt_.bind_addr, deadline));
  msg::Hello hello;
  hello.role = wire::Role::kAgent;
  hello.name = facts_.host;
  hello.job_id = opt_.job_id;
  hello.node_index = static_cast<uint32_t>(opt_.node_index);
  Status st = ClientHandshake(conn.get(), hello, secret_, deadline);
  if (!st.ok()) return st.Prefixed(fmt::format("coordinator {}", address));
  DS_RETURN_IF_ERROR(WriteFrame(conn.get(), wire::MsgType::kRegister, facts_.Encode(), deadline));
  // Little in flight in the kernel: what the coordinator has yet to read
  // waits in the Outbox (bounded by back-pressure), so a Stop's WorkerExited
  // and Stopped are never behind megabytes of old output.
  int sndbuf = static_cast<int>(kOutboxHighWater / 4);
  ::setsockopt(conn.get(), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
  conn_ = std::move(conn);
  const bool moved = !leader_.empty() && leader_ != address;
  leader_ = address;
  if (moved) KeepAttachFile();
  return Status::OK();
}

void AgentSession::KnownCoordinators(const std::vector<std::string>& addresses) {
  coordinators_ = addresses;
  KeepAttachFile();
}

void AgentSession::KeepAttachFile() {
  if (!attach_dir_) return;
  AttachFile f{opt_.job_id, static_cast<uint32_t>(opt_.node_index), AttachKey(secret_), {leader_}};
  for (const std::string& a : coordinators_)
    if (a != leader_) f.coordinators.push_back(a);
  if (Status st = WriteAttachFile(*attach_dir_, f); !st.ok()) {
    DS_LOG(Warn, Agent) << "no attach file (dslaunch attach finds the job elsewhere): " << st.message();
    attach_dir_.reset();
  }
}

// The loop waits for this try (a refused connection returns at once; an
// unreachable host takes the deadline): the workers' pipes wait meanwhile.
bool AgentSession::Reconnect(const std::string& address) {
  constexpr auto kReconnectDeadline = std::chrono::milliseconds(500);
  Close();
  inbuf_.clear();
  write_error_.clear();
  Status st = ConnectAndRegister(address.empty() ? opt_.coordinator : address,
                                 std::chrono::steady_clock::now() + kReconnectDeadline);
  if (!st.ok()) DS_LOG(Debug, Agent) << "no new coordinator yet: " << st.message();
  return st.ok();
}

void AgentSession::Send(wire::MsgType type, const Bytes& payload) {
  if (conn_.get() < 0) return;
  outbox_.Push(type, payload);
  FlushOutbox();
}

void AgentSession::Close() {
  conn_.Reset();
  outbox_.Clear();
}

void AgentSession::FlushOutbox() {
  if (conn_.get() < 0 || !write_error_.empty()) return;
  Status st = outbox_.Flush(conn_.get());
  if (!st.ok()) write_error_ = "write to the coordinator failed: " + st.message();
}

void AgentSession::FlushBeforeExit(std::chrono::steady_clock::time_point deadline) {
  while (conn_.get() >= 0 && write_error_.empty() && !outbox_.empty()) {
    int left = PollTimeoutUntil(deadline, std::chrono::steady_clock::now());
    pollfd p{conn_.get(), POLLOUT, 0};
    if (left == 0 || ::poll(&p, 1, left) == 0) return;
    FlushOutbox();
  }
}

void AgentSession::AddPollFds(std::vector<pollfd>* fds) const {
  if (conn_.get() >= 0)
    fds->push_back({conn_.get(), static_cast<short>(POLLIN | (outbox_.empty() ? 0 : POLLOUT)), 0});
  if (heartbeat_.get() >= 0) fds->push_back({heartbeat_.get(), POLLIN, 0});
  if (SnapshotKeeper* k = snapshots_ ? snapshots_->keeper() : nullptr) {
    fds->push_back({k->inotify_fd(), POLLIN, 0});
    fds->push_back({k->events_fd(), POLLIN, 0});
  }
  if (stacks_) fds->push_back({stacks_->events_fd(), POLLIN, 0});
  children_.AddPollFds(fds);  // to the log, not the coordinator: no back-pressure
  if (workers_) workers_->AddControlFds(fds);
  // Back-pressure: with the coordinator this far behind, the workers wait.
  if (workers_ && outbox_.bytes() < kOutboxHighWater) workers_->AddPollFds(fds);
}

std::optional<TimePoint> AgentSession::NextDeadline() const {
  return control_ ? control_->NextDeadline() : std::nullopt;
}

int AgentSession::PollTimeoutMs() const { return PollTimeoutUntil(NextDeadline(), clock_.Now()); }

void AgentSession::HandlePollResults(const std::vector<pollfd>& fds, size_t first) {
  SnapshotKeeper* keeper = snapshots_ ? snapshots_->keeper() : nullptr;
  for (size_t i = first; i < fds.size(); ++i) {
    if (fds[i].revents == 0) continue;
    int fd = fds[i].fd;
    if (fd == conn_.get()) {
      if (fds[i].revents & POLLOUT) FlushOutbox();
      if (fds[i].revents & ~POLLOUT) ReadCoordinator();
    } else if (fd == heartbeat_.get()) {
      ReadHeartbeats();
    } else if (keeper && fd == keeper->inotify_fd()) {
      keeper->OnInotify();
    } else if (keeper && fd == keeper->events_fd()) {
      control_->OnSnapshotEvents();
    } else if (stacks_ && fd == stacks_->events_fd()) {
      if (auto m = stacks_->Take()) control_->OnStacksTaken(*m);
    } else if (children_.OnReadable(fd)) {
      // a launch tree command's output: relayed to the log
    } else if (workers_ && workers_->OnControlReadable(fd, [this](int rank, const Frame& f) {
                 control_->OnWorkerControl(rank, f);
               })) {
      // a worker's control frame
    } else if (workers_) {
      workers_->OnReadable(fd, [this](int rank, int stream, const std::string& line) {
        OnWorkerLine(rank, stream, line);
      });
    }
  }
}

void AgentSession::ReadCoordinator() {
  uint8_t chunk[65536];
  std::string ended;  // why the stream ended; frames before it still count
  while (conn_.get() >= 0) {
    ssize_t r = ::recv(conn_.get(), chunk, sizeof(chunk), MSG_DONTWAIT);
    if (r > 0) {
      inbuf_.insert(inbuf_.end(), chunk, chunk + r);
      continue;
    }
    if (r == 0) ended = "connection closed by the coordinator";
    else if (errno == EINTR) continue;
    else if (errno != EAGAIN && errno != EWOULDBLOCK) ended = std::string("read: ") + std::strerror(errno);
    break;
  }
  size_t pos = 0;
  while (conn_.get() >= 0 && inbuf_.size() - pos >= wire::kHeaderSize) {
    auto h = DecodeHeader(inbuf_.data() + pos);
    if (!h.ok()) return control_->OnLinkLost("bad frame from the coordinator: " + h.status().message());
    if (inbuf_.size() - pos - wire::kHeaderSize < h->length) break;
    Frame f;
    f.type = h->type;
    auto begin = inbuf_.begin() + static_cast<ptrdiff_t>(pos + wire::kHeaderSize);
    f.payload.assign(begin, begin + h->length);
    pos += wire::kHeaderSize + h->length;
    control_->OnFrame(f);
  }
  inbuf_.erase(inbuf_.begin(), inbuf_.begin() + static_cast<ptrdiff_t>(std::min(pos, inbuf_.size())));
  if (!ended.empty()) control_->OnLinkLost(ended);
}

void AgentSession::ReadHeartbeats() {
  uint8_t buf[kStepBeatMetricSize + 1];  // one more: an oversized datagram shows as too long
  while (true) {
    ssize_t n = ::recv(heartbeat_.get(), buf, sizeof(buf), MSG_DONTWAIT);
    if (n < 0) return;
    if (auto beat = DecodeStepBeat(buf, static_cast<size_t>(n))) control_->OnStepBeat(*beat);
  }
}

void AgentSession::OnTerminationSignal(int sig) {
  if (control_) control_->OnTerminationSignal(sig);
}

void AgentSession::Reap() {
  while (true) {
    // Peek first (WNOWAIT): while the leader is an unreaped zombie its pid
    // cannot be reused, so signalling its group can only hit this worker's
    // leftovers, never someone else's processes.
    siginfo_t info{};
    if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) return;
    pid_t pid = info.si_pid;
    if (workers_) workers_->BeforeReap(pid);
    int status = 0;
    if (::waitpid(pid, &status, 0) != pid) return;
    if (auto ended = children_.OnExited(pid, status)) {
      if (control_) control_->OnChildEnded(*ended);
    } else if (workers_) {
      auto sink = [this](int rank, int stream, const std::string& line) { OnWorkerLine(rank, stream, line); };
      if (auto e = workers_->OnReaped(pid, status, sink)) control_->OnWorkerExited(*e);
    }
  }
}

void AgentSession::CheckTimers() {
  if (!control_) return;
  if (!write_error_.empty()) control_->OnLinkLost(write_error_);
  control_->OnTick();
}

}  // namespace ds
