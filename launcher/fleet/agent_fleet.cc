#include "launcher/fleet/agent_fleet.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "common/duration.h"
#include "common/strings.h"
#include "launcher/report/exit_status.h"
#include "wire/hmac_auth.h"

namespace ds {

namespace {
double SecondsOf(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

AgentFleet::AgentFleet(asio::io_context& io, Coordinator& coord, Spawner& spawner, std::vector<AgentSpec> specs,
                       FleetOptions options)
    : io_(io), coord_(coord), spawner_(spawner), specs_(std::move(specs)), opt_(std::move(options)),
      members_(specs_.size()), rejoin_timer_(io), drain_timer_(io), tree_timer_(io) {
  if (opt_.tree.width > 0)
    tree_ = std::make_unique<LaunchTree>(static_cast<int>(specs_.size()), opt_.tree.width, opt_.tree.handoff_timeout);
}

AgentFleet::~AgentFleet() {
  // Agents a spawner call delivered after the io loop stopped: their
  // handles terminate them as they go.
  if (spawn_thread_.joinable()) spawn_thread_.join();
  spawned_.clear();
}

void AgentFleet::Spawn(std::vector<AgentSpec> specs, std::function<void(Started)> done) {
  spawner_busy_ = true;  // the spawner is one thread's at a time
  if (spawn_thread_.joinable()) spawn_thread_.join();
  spawn_done_ = std::move(done);
  spawn_thread_ = std::thread([this, specs = std::move(specs), alive = std::weak_ptr<void>(alive_)] {
    Started started;
    try {
      started = spawner_.Start(specs);
    } catch (const std::exception& e) {  // never past this thread: every start fails, naming why
      started.clear();
      for (const AgentSpec& s : specs)
        started.emplace_back(Status::Internal(fmt::format("{}: starting its agent failed: {}", s.host, e.what())));
    }
    {
      std::lock_guard<std::mutex> lock(spawn_mu_);
      spawned_ = std::move(started);
    }
    asio::post(io_, [this, alive] {
      if (!alive.lock()) return;
      Started results;
      {
        std::lock_guard<std::mutex> lock(spawn_mu_);
        results.swap(spawned_);
      }
      spawner_busy_ = false;
      std::exchange(spawn_done_, nullptr)(std::move(results));
      SpawnerFree();
    });
  });
}

std::string AgentFleet::Enroll(int node) {
  return coord_.EnrollAgent(node, opt_.derived_token ? opt_.derived_token(node) : "");  // the secret stays here
}

void AgentFleet::Start() {
  std::vector<int> nodes;
  // One token per node, except where one tool run starts them all with one
  // stdin (srun, mpirun, pdsh): then one token registers each node once.
  const std::string shared = spawner_.SharesPayload() && !opt_.derived_token ? RandomHex(32) : "";
  for (AgentSpec& s : specs_) {
    nodes.push_back(s.node_index);
    s.stdin_payload = shared.empty() ? Enroll(s.node_index) : coord_.EnrollAgent(s.node_index, shared);
  }
  std::vector<int> first = tree_ ? tree_->Roots() : nodes;
  std::vector<AgentSpec> specs;
  for (int n : first) specs.push_back(specs_[n]);
  Spawn(std::move(specs), [this, first](Started started) {
    started_ = true;
    AdoptAll(first, std::move(started));
  });
}

// A start that failed aborts the job, naming the host and the reason.
void AgentFleet::AdoptAll(const std::vector<int>& nodes, Started started) {
  for (size_t i = 0; i < started.size(); ++i) {
    const int node = nodes[i];
    if (!started[i].ok()) {
      coord_.Abort(specs_[node].host, started[i].status().message(), kExitFailure);
      continue;
    }
    Adopt(node, std::move(started[i]).value());
  }
}

// The handle it replaces (a lost agent, or one that never registered) is
// ended by the reaper: over SSH that can take seconds on a dark session.
void AgentFleet::Adopt(int node, std::unique_ptr<AgentHandle> handle) {
  Member& m = members_[node];
  reaper_.Reap(std::move(m.handle));
  m.lost = false;
  ++m.incarnation;
  if (draining_) return reaper_.Reap(std::move(handle));  // the job ended while it was being started
  m.handle = std::move(handle);
  Watch(node);
}

void AgentFleet::SpawnerFree() {
  if (draining_ || spawner_busy_) return;
  if (direct_queue_.empty()) return ArmRejoinTimer();
  std::vector<int> nodes;
  nodes.swap(direct_queue_);
  std::vector<AgentSpec> specs;
  for (int n : nodes) specs.push_back(specs_[n]);
  Spawn(std::move(specs), [this, nodes](Started started) { AdoptAll(nodes, std::move(started)); });
}

// Waits (once) for the agent's exit fd to become readable. The watch is on a
// duplicate: the handle keeps its own fd.
void AgentFleet::Watch(int node) {
  Member& m = members_[node];
  m.exit_watch.reset();
  const int fd = ::fcntl(m.handle->exit_fd(), F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return;  // cannot watch it: the coordinator still sees its link close
  m.exit_watch = std::make_unique<asio::posix::stream_descriptor>(io_, fd);
  m.exit_watch->async_wait(asio::posix::stream_descriptor::wait_read,
                           [this, node, inc = m.incarnation](boost::system::error_code ec) {
                             if (!ec && inc == members_[node].incarnation) OnExited(node);
                           });
}

void AgentFleet::OnExited(int node) {
  if (draining_) {
    if (!AnyRunning()) TerminateAllAndStop();
    return;
  }
  // A registered agent's end reaches the coordinator as a closed link.
  if (coord_.state() == CoordState::kDone || members_[node].registered) return;
  coord_.Abort(specs_[node].host,
               fmt::format("dsagent exited with status {} before registering", members_[node].handle->ExitStatus()),
               kExitFailure);
}

void AgentFleet::OnAgentRegistered(int node) {
  members_[node].registered = true;
  next_try_.erase(node);  // taken back, if it was lost
  if (!tree_ || draining_) return;
  msg::StartAgents start;
  for (int child : tree_->OnRegistered(node, RealClock().Now()))
    start.agents.push_back({static_cast<uint32_t>(child), specs_[child].host,
                            opt_.tree.command(specs_[child], node), specs_[child].stdin_payload});
  if (start.agents.empty()) return;
  coord_.StartAgents(node, start);
  ArmTreeTimer();
}

void AgentFleet::OnAgentEnded(int parent, const msg::AgentEnded& ended) {
  const int child = static_cast<int>(ended.node);
  if (!tree_ || draining_ || !tree_->OnStartEnded(parent, child)) return;
  const std::string status =
      ended.signal ? fmt::format("signal {}", ended.signal) : fmt::format("status {}", ended.exit_code);
  StartDirect(child, fmt::format("{} could not start it ({}{}{})", specs_[parent].host, status,
                                 ended.reason.empty() ? "" : ": ", Printable(ended.reason)));
}

// Every unregistered node of the subtree gets a new token (the ones its
// former parent was given may be out there in a command still running: spent
// now); the child's goes on its stdin, the others' to their new parents.
void AgentFleet::StartDirect(int node, const std::string& why) {
  opt_.notice(fmt::format("{}: {}; starting it from here", specs_[node].host, why));
  for (int n : tree_->Subtree(node))
    if (!members_[n].registered) specs_[n].stdin_payload = Enroll(n);
  direct_queue_.push_back(node);
  SpawnerFree();
}

void AgentFleet::ArmTreeTimer() {
  auto next = tree_->NextDeadline();
  if (!next) return;
  tree_timer_.expires_at(*next);
  tree_timer_.async_wait([this](boost::system::error_code ec) {
    if (ec || draining_) return;
    for (int node : tree_->Overdue(RealClock().Now()))
      StartDirect(node, fmt::format("not registered {} after its parent was told to start it",
                                    FormatDuration(SecondsOf(opt_.tree.handoff_timeout))));
    ArmTreeTimer();
  });
}

void AgentFleet::Rejoin(int node) {
  if (draining_ || next_try_.count(node)) return;
  backoff_[node] = opt_.first_rejoin_delay;
  next_try_[node] = RealClock().Now() + opt_.first_rejoin_delay;
  ArmRejoinTimer();
}

void AgentFleet::ArmRejoinTimer() {
  if (next_try_.empty() || spawner_busy_) return;
  auto first = std::min_element(next_try_.begin(), next_try_.end(),
                                [](const auto& a, const auto& b) { return a.second < b.second; });
  rejoin_timer_.expires_at(first->second);
  rejoin_timer_.async_wait([this](boost::system::error_code ec) {
    if (!ec) TryRejoins();
  });
}

// One attempt at a time: the first node that is due (every node in
// next_try_ is still lost: a registration takes it out).
void AgentFleet::TryRejoins() {
  if (draining_ || spawner_busy_) return;
  const auto now = RealClock().Now();
  for (auto& [node, when] : next_try_) {
    if (now < when) continue;
    backoff_[node] = std::min(2 * backoff_[node], opt_.max_rejoin_delay);
    when = now + backoff_[node];
    AgentSpec spec = specs_[node];
    spec.stdin_payload = Enroll(node);  // the first token is spent
    Spawn({spec}, [this, node](Started started) { Rejoined(node, std::move(started[0])); });
    return;
  }
  ArmRejoinTimer();
}

void AgentFleet::Rejoined(int node, Result<std::unique_ptr<AgentHandle>> started) {
  const bool still_lost = next_try_.count(node) > 0;  // a registration meanwhile took it out
  if (!started.ok()) {
    if (still_lost)
      opt_.notice(fmt::format("{} is still lost: {}; next try in {}", specs_[node].host, started.status().message(),
                              FormatDuration(SecondsOf(backoff_[node]))));
    return;
  }
  // If this agent has not registered by the next try (TryRejoins set it,
  // the wait already doubled), the next attempt replaces it: an agent that
  // starts but never registers (it cannot reach us) is replaced ever more
  // rarely, up to max_rejoin_delay, never every first delay for the rest of
  // the job. Only a registration starts the node's waits over.
  Adopt(node, std::move(started).value());
}

bool AgentFleet::AnyRunning() const {
  return std::any_of(members_.begin(), members_.end(),
                     [](const Member& m) { return m.handle && !m.lost && m.handle->Running(); });
}

void AgentFleet::OnAgentLost(int node) {
  members_[node].lost = true;
  if (opt_.derived_token) Enroll(node);  // its node may start a new agent
  if (opt_.rejoin) Rejoin(node);
}

void AgentFleet::OnAgentAway(int node) {
  if (opt_.derived_token) Enroll(node);
}

void AgentFleet::Drain(Clock::duration grace) {
  draining_ = true;
  rejoin_timer_.cancel();
  tree_timer_.cancel();
  if (!AnyRunning()) return TerminateAllAndStop();
  drain_timer_.expires_after(grace);
  drain_timer_.async_wait([this](boost::system::error_code ec) {
    if (!ec) TerminateAllAndStop();
  });
}

// The reaper ends what is left; the fleet's destructor waits for it.
void AgentFleet::TerminateAllAndStop() {
  drain_timer_.cancel();
  for (Member& m : members_) {
    m.exit_watch.reset();
    reaper_.Reap(std::move(m.handle));
  }
  io_.stop();
}

}  // namespace ds
