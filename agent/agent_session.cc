#include "agent/agent_session.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "agent/core_binding.h"
#include "agent/descendants.h"
#include "agent/node_facts.h"
#include "agent/port_hold.h"
#include "common/cpu_binding.h"
#include "common/env_registry.h"
#include "common/log.h"
#include "common/netif.h"
#include "common/strings.h"
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
  for (auto& s : slots_)
    if (s.proc && !s.proc->exited) s.proc->SignalGroup(SIGKILL);
}

Status AgentSession::Connect() {
  Deadline deadline = std::chrono::steady_clock::now() + Seconds(opt_.connect_timeout);  // real I/O time
  DS_ASSIGN_OR_RETURN(auto hp, SplitHostPort(opt_.coordinator));
  DS_ASSIGN_OR_RETURN(msg::Register facts, GatherNodeFacts(opt_.node_index, opt_.host, opt_.bind_addr, hp.first));
  host_ = facts.host;
  addr_ = facts.addr;
  DS_ASSIGN_OR_RETURN(conn_, ConnectTcp(opt_.coordinator, opt_.bind_addr, deadline));
  msg::Hello hello;
  hello.role = wire::Role::kAgent;
  hello.name = facts.host;
  hello.job_id = opt_.job_id;
  hello.node_index = static_cast<uint32_t>(opt_.node_index);
  Status st = ClientHandshake(conn_.get(), hello, secret_, deadline);
  if (!st.ok()) return st.Prefixed(fmt::format("coordinator {}", opt_.coordinator));

  DS_ASSIGN_OR_RETURN(auto hb, BindUdp(facts.addr));
  heartbeat_ = std::move(hb.first);
  facts.heartbeat_addr = hb.second;
  DS_RETURN_IF_ERROR(WriteFrame(conn_.get(), wire::MsgType::kRegister, facts.Encode(), deadline));
  // Little in flight in the kernel: what the coordinator has yet to read
  // waits in the Outbox (bounded by back-pressure), so a Stop's WorkerExited
  // and Stopped are never behind megabytes of old output.
  int sndbuf = static_cast<int>(kOutboxHighWater / 4);
  ::setsockopt(conn_.get(), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
  last_recv_ = last_ping_ = clock_.Now();
  DS_LOG(Info, Agent) << "registered as node " << opt_.node_index << " (" << facts.addr << ")";
  return Status::OK();
}

void AgentSession::Send(wire::MsgType type, const Bytes& payload) {
  if (conn_.get() < 0) return;
  outbox_.Push(type, payload);
  FlushOutbox();
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
  if (snapshots_) {
    fds->push_back({snapshots_->inotify_fd(), POLLIN, 0});
    fds->push_back({snapshots_->events_fd(), POLLIN, 0});
  }
  if (children_) children_->AddPollFds(fds);  // to the log, not the coordinator: no back-pressure
  // Back-pressure: with the coordinator this far behind, the workers wait.
  if (outbox_.bytes() >= kOutboxHighWater) return;
  for (const auto& s : slots_) {
    if (!s.proc) continue;
    if (s.proc->stdout_fd() >= 0) fds->push_back({s.proc->stdout_fd(), POLLIN, 0});
    if (s.proc->stderr_fd() >= 0) fds->push_back({s.proc->stderr_fd(), POLLIN, 0});
  }
}

int AgentSession::PollTimeoutMs() const { return PollTimeoutUntil(NextDeadline(), clock_.Now()); }

void AgentSession::HandlePollResults(const std::vector<pollfd>& fds, size_t first) {
  for (size_t i = first; i < fds.size(); ++i) {
    if (fds[i].revents == 0) continue;
    int fd = fds[i].fd;
    if (fd == conn_.get()) {
      if (fds[i].revents & POLLOUT) FlushOutbox();
      if (fds[i].revents & ~POLLOUT) ReadCoordinator();
    } else if (fd == heartbeat_.get()) {
      ReadHeartbeats();
    } else if (snapshots_ && fd == snapshots_->inotify_fd()) {
      snapshots_->OnInotify();
    } else if (snapshots_ && fd == snapshots_->events_fd()) {
      SendSnapshotMessages();
    } else if (children_ && children_->OnReadable(fd)) {
      // a launch tree command's output: relayed to the log
    } else {
      for (auto& s : slots_) {
        if (!s.proc || (fd != s.proc->stdout_fd() && fd != s.proc->stderr_fd())) continue;
        // Bounded: one busy pipe cannot keep the loop from the others, the
        // coordinator, signals and timers.
        s.proc->ReadPipe(fd, [&](int stream, const std::string& line) { SendLine(s, stream, line); },
                         kPipeReadPerWake);
        break;
      }
    }
  }
}

void AgentSession::SendLine(const Slot& s, int stream, const std::string& line) {
  Send(wire::MsgType::kOutput, msg::Output{generation_, s.rank, static_cast<uint8_t>(stream), line}.Encode());
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
  last_recv_ = clock_.Now();
  size_t pos = 0;
  while (conn_.get() >= 0 && inbuf_.size() - pos >= wire::kHeaderSize) {
    auto h = DecodeHeader(inbuf_.data() + pos);
    if (!h.ok()) return Lost("bad frame from the coordinator: " + h.status().message());
    if (inbuf_.size() - pos - wire::kHeaderSize < h->length) break;
    Frame f;
    f.type = h->type;
    auto begin = inbuf_.begin() + static_cast<ptrdiff_t>(pos + wire::kHeaderSize);
    f.payload.assign(begin, begin + h->length);
    pos += wire::kHeaderSize + h->length;
    HandleFrame(f);
  }
  inbuf_.erase(inbuf_.begin(), inbuf_.begin() + static_cast<ptrdiff_t>(std::min(pos, inbuf_.size())));
  if (!ended.empty()) Lost(ended);
}

void AgentSession::HandleFrame(const Frame& f) {
  auto bad = [&](const Status& st) { Lost("bad message from the coordinator: " + st.message()); };
  switch (f.type) {
    case wire::MsgType::kPing:
      return;
    case wire::MsgType::kReserve: {
      auto m = msg::Reserve::Decode(f.payload);
      return m.ok() ? OnReserve(*m) : bad(m.status());
    }
    case wire::MsgType::kAssign: {
      auto m = msg::Assign::Decode(f.payload);
      return m.ok() ? OnAssign(*m) : bad(m.status());
    }
    case wire::MsgType::kStop: {
      auto m = msg::Stop::Decode(f.payload);
      if (!m.ok()) return bad(m.status());
      if (m->generation != generation_ && !slots_.empty()) return;  // stale
      generation_ = m->generation;
      stopping_ = true;
      held_port_.Reset();
      return BeginStop(stop_grace_);
    }
    case wire::MsgType::kShutdown:
      // The agents this one started were told too: wait (bounded) for them
      // to end, so that the launcher, waiting for this agent, waits for them.
      if (children_ && children_->running() > 0)
        children_until_ = clock_.Now() + stop_grace_ + Seconds(opt_.heartbeat_timeout);
      return Quit(ds::ExitCode(AgentExit::kShutdown), "shutdown");
    case wire::MsgType::kSnapshotSetup: {
      auto m = msg::SnapshotSetup::Decode(f.payload);
      return m.ok() ? OnSnapshotSetup(*m) : bad(m.status());
    }
    case wire::MsgType::kReplicate: {
      auto m = msg::Replicate::Decode(f.payload);
      if (!m.ok()) return bad(m.status());
      if (snapshots_) snapshots_->SetTargets(*m);
      return;
    }
    case wire::MsgType::kFetch: {
      auto m = msg::Fetch::Decode(f.payload);
      if (!m.ok()) return bad(m.status());
      if (snapshots_) return snapshots_->StartFetch(*m);
      return Send(wire::MsgType::kFetched, msg::Fetched{m->generation, m->step, m->id.set, 0, 0, "snapshots are off on this node"}.Encode());
    }
    case wire::MsgType::kStartAgents: {
      auto m = msg::StartAgents::Decode(f.payload);
      return m.ok() ? OnStartAgents(*m) : bad(m.status());
    }
    default:
      return Lost(fmt::format("unexpected message type {}", static_cast<int>(f.type)));
  }
}

void AgentSession::OnStartAgents(const msg::StartAgents& m) {
  if (!children_) children_ = std::make_unique<ChildAgents>();
  for (const msg::AgentEnded& e : children_->Start(m)) Send(wire::MsgType::kAgentEnded, e.Encode());
}

void AgentSession::OnReserve(const msg::Reserve& m) {
  // The wildcard address: the hold then conflicts with a bind of the port on
  // any local address, which is what the workers' later bind will need.
  auto held = HoldPort("0.0.0.0", static_cast<int>(m.port));
  msg::Reserved r;
  r.generation = m.generation;
  if (held.ok()) {
    held_port_ = std::move(held->first);
    r.port = static_cast<uint32_t>(held->second);
  } else {
    r.error = held.status().message();
  }
  Send(wire::MsgType::kReserved, r.Encode());
}

void AgentSession::OnSnapshotSetup(const msg::SnapshotSetup& m) {
  msg::SnapshotReady ready;
  auto keeper = SnapshotKeeper::Start({opt_.job_id, host_, static_cast<uint32_t>(opt_.node_index), addr_}, m);
  if (keeper.ok()) {
    snapshots_ = std::move(keeper).value();
    ready.peer_addr = snapshots_->peer_addr();
    ready.memory_dir = snapshots_->memory_dir();
    DS_LOG(Info, Agent) << "snapshots in " << ready.memory_dir << ", shard server on " << ready.peer_addr;
  } else {
    ready.error = fmt::format("host {}: {}", host_, keeper.status().message());
  }
  SendSnapshotMessages();  // what the node's disk holds, before Ready lets the coordinator decide
  Send(wire::MsgType::kSnapshotReady, ready.Encode());
}

void AgentSession::SendSnapshotMessages() {
  if (!snapshots_) return;
  for (auto& [type, payload] : snapshots_->TakeOutgoing()) Send(type, payload);
  if (const std::string failed = snapshots_->failure(); !failed.empty() && !quitting_) {
    // A thread of the agent failed: its state is unknown, so the node leaves
    // the job the clean way (workers stopped, a distinct exit code) and the
    // coordinator carries on without it.
    std::fprintf(stderr, "dsagent %s: snapshots: %s; stopping my workers and leaving the job\n", opt_.host.c_str(),
                 Printable(failed).c_str());
    Quit(ds::ExitCode(AgentExit::kInternalError), "snapshots: " + failed);
  }
}

KeyValues AgentSession::WorkerEnvironment(const msg::WorkerSpec& w, const std::string& ifname, const Slot& slot,
                                          int omp_threads) const {
  KeyValues env;
  std::map<std::string, size_t> index;
  auto set = [&](const std::string& k, const std::string& v) {
    auto it = index.find(k);
    if (it != index.end()) env[it->second].second = v;
    else { index[k] = env.size(); env.emplace_back(k, v); }
  };
  const bool step_agent = !opt_.step_identity.empty();
  for (const auto& [k, v] : ProcessEnvironment())
    if (k != "DSLAUNCH_SECRET_FD" && !(step_agent && IsStepTaskVariable(k))) set(k, v);
  for (const auto& [k, v] : w.env) set(k, v);
  set("DSLAUNCH_HEARTBEAT_TOKEN", slot.beat_token);  // the agent's own, never the coordinator's or ours
  if (snapshots_) set("DSLAUNCH_SNAPSHOT_DIR", snapshots_->memory_dir());
  if (!slot.error_file.empty()) set("TORCHELASTIC_ERROR_FILE", slot.error_file);
  if (omp_threads > 0) set("OMP_NUM_THREADS", std::to_string(omp_threads));
  // Nobody chose the interfaces: the one that routes to MASTER_ADDR here.
  for (const char* k : {"NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"})
    if (!ifname.empty() && !index.count(k)) set(k, ifname);
  // Ours or none: a path inherited from elsewhere is never the one we read.
  if (slot.error_file.empty())
    std::erase_if(env, [](const auto& kv) { return kv.first == "TORCHELASTIC_ERROR_FILE"; });
  return env;
}

void AgentSession::OnAssign(const msg::Assign& m) {
  slots_.clear();  // the previous generation's workers are all reaped (or get SIGKILL now)
  KillDescendants(ChildPids());  // and nothing of theirs is left to meet the new generation
  generation_ = m.generation;
  stop_grace_ = milliseconds(m.stop_grace_ms);
  hang_timeout_ = milliseconds(m.hang_timeout_ms);
  stopping_ = false;
  std::string ifname;
  if (!m.master_addr.empty()) {
    auto route = RouteTo(m.master_addr);
    if (route.ok()) ifname = route->ifname;
  }
  // The cores of each local rank, known before any fork (core_binding.h).
  std::vector<std::vector<int>> cores;
  std::string bind_error;
  if (m.bind_cores) {
    // Each rank's CUDA_VISIBLE_DEVICES as it will see it: the Assign's, else the one we inherited.
    std::vector<std::optional<std::string>> visible;
    for (const msg::WorkerSpec& w : m.workers) {
      std::optional<std::string> v = EnvRaw("CUDA_VISIBLE_DEVICES");
      for (const auto& [k, val] : w.env)
        if (k == "CUDA_VISIBLE_DEVICES") v = val;
      visible.push_back(std::move(v));
    }
    auto planned = PlanCoreBinding(m.core_list, static_cast<int>(m.workers.size()), AllowedCpus(), NumaNodeCpus(),
                                   LocalRankGpuNuma(GpuNumaNodes(), visible));
    if (planned.ok()) {
      if (!planned->note.empty()) DS_LOG(Info, Agent) << "bind_cores_to_rank: " << planned->note;
      cores = std::move(planned->cores);
    } else {
      bind_error = fmt::format("dsagent: host {}: {}", host_, planned.status().message());
    }
  }
  held_port_.Reset();  // release MASTER_PORT just before the workers start
  for (size_t i = 0; i < m.workers.size(); ++i) {
    const msg::WorkerSpec& w = m.workers[i];
    if (quitting_) break;  // the coordinator went away while we were spawning
    Slot s;
    s.rank = w.rank;
    s.local_rank = w.local_rank;
    s.beat_token = RandomHex(kStepBeatTokenChars / 2);
    if (!bind_error.empty()) {
      FailToStart(std::move(s), bind_error);
      continue;
    }
    auto error_file = error_files_.Prepare(generation_, s.rank);
    if (error_file.ok()) s.error_file = *error_file;
    else
      DS_LOG(Warn, Proc) << "rank " << s.rank << " runs without TORCHELASTIC_ERROR_FILE: "
                         << error_file.status().message();
    WorkerLaunch launch;
    launch.argv = m.argv;
    if (m.local_rank_arg) {  // DeepSpeed's spelling and place: right after the script, before the user's arguments
      const bool inside = m.local_rank_at >= 0 && static_cast<size_t>(m.local_rank_at) <= launch.argv.size();
      launch.argv.insert(inside ? launch.argv.begin() + m.local_rank_at : launch.argv.end(),
                         fmt::format("--local_rank={}", w.local_rank));
    }
    if (i < cores.size()) launch.cpus = cores[i];
    const int omp = m.omp_from_binding && !launch.cpus.empty() ? static_cast<int>(launch.cpus.size()) : 0;
    launch.env = WorkerEnvironment(w, ifname, s, omp);
    launch.working_dir = m.working_dir;
    auto proc = WorkerProcess::Start(launch);
    if (!proc.ok()) {
      FailToStart(std::move(s), "dsagent: " + proc.status().message());
      continue;
    }
    s.proc = std::move(proc).value();
    s.last_beat = clock_.Now();
    Send(wire::MsgType::kWorkerStarted, msg::WorkerStarted{generation_, s.rank, s.proc->pid()}.Encode());
    slots_.push_back(std::move(s));
  }
}

void AgentSession::FailToStart(Slot s, const std::string& why) {
  SendLine(s, 2, why);
  msg::WorkerExited e{generation_, s.rank, 0, 127, 0, 0, 1};
  Send(wire::MsgType::kWorkerExited, e.Encode());
  s.reported = true;
  slots_.push_back(std::move(s));
}

}  // namespace ds
