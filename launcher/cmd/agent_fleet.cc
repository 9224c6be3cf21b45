#include "launcher/cmd/agent_fleet.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "launcher/report/exit_status.h"

namespace ds {

namespace {
constexpr double kFirstRejoinDelay = 2.0;  // seconds after the loss
constexpr double kMaxRejoinDelay = 30.0;
}  // namespace

AgentFleet::AgentFleet(asio::io_context& io, Coordinator& coord, Spawner& spawner, std::vector<AgentSpec> specs,
                       std::function<void(const std::string&)> notice, std::string fixed_token)
    : io_(io), coord_(coord), spawner_(spawner), specs_(std::move(specs)), notice_(std::move(notice)),
      fixed_token_(std::move(fixed_token)),
      members_(specs_.size()),
      rejoin_timer_(io), drain_timer_(io) {}

AgentFleet::~AgentFleet() {
  // Agents the start thread delivered after the io loop stopped: their
  // handles terminate them as they go.
  if (start_thread_.joinable()) start_thread_.join();
  start_results_.clear();
  if (rejoin_thread_.joinable()) rejoin_thread_.join();
}

void AgentFleet::Start() {
  std::vector<int> nodes;
  for (const AgentSpec& s : specs_) nodes.push_back(s.node_index);
  const std::string token = coord_.EnrollAgents(nodes, fixed_token_);  // the agents' key; the secret stays here
  for (AgentSpec& s : specs_) s.stdin_payload = token;
  rejoin_busy_ = true;  // the spawner is one thread's at a time: no rejoin until every agent started
  start_thread_ = std::thread([this, alive = std::weak_ptr<void>(alive_)] {
    auto started = spawner_.Start(specs_);
    {
      std::lock_guard<std::mutex> lock(start_mu_);
      start_results_ = std::move(started);
    }
    asio::post(io_, [this, alive] {
      if (alive.lock()) Started();
    });
  });
}

void AgentFleet::Started() {
  std::vector<Result<std::unique_ptr<AgentHandle>>> started;
  {
    std::lock_guard<std::mutex> lock(start_mu_);
    started.swap(start_results_);
  }
  started_ = true;
  rejoin_busy_ = false;
  for (size_t i = 0; i < started.size(); ++i) {
    if (!started[i].ok()) {
      coord_.Abort(specs_[i].host, started[i].status().message(), kExitFailure);
      continue;
    }
    members_[i].handle = std::move(started[i]).value();
    if (draining_) {  // the job ended while agents were still starting
      members_[i].handle->Terminate();
      continue;
    }
    Watch(static_cast<int>(i));
  }
  if (!draining_) ArmRejoinTimer();
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
  if (coord_.state() == CoordState::kDone || coord_.control().NodeRegistered(node)) return;
  coord_.Abort(specs_[node].host,
               fmt::format("dsagent exited with status {} before registering", members_[node].handle->ExitStatus()),
               kExitFailure);
}

void AgentFleet::Rejoin(int node) {
  if (draining_ || next_try_.count(node)) return;
  backoff_s_[node] = kFirstRejoinDelay;
  next_try_[node] = RealClock().Now() + Seconds(kFirstRejoinDelay);
  ArmRejoinTimer();
}

void AgentFleet::ArmRejoinTimer() {
  if (next_try_.empty() || rejoin_busy_) return;
  auto first = std::min_element(next_try_.begin(), next_try_.end(),
                                [](const auto& a, const auto& b) { return a.second < b.second; });
  rejoin_timer_.expires_at(first->second);
  rejoin_timer_.async_wait([this](boost::system::error_code ec) {
    if (!ec) TryRejoins();
  });
}

// One attempt at a time: the first node that is due and still lost.
void AgentFleet::TryRejoins() {
  if (draining_ || rejoin_busy_) return;
  const std::vector<int> lost = coord_.control().LostNodes();
  const auto now = RealClock().Now();
  for (auto it = next_try_.begin(); it != next_try_.end();) {
    const int node = it->first;
    if (std::find(lost.begin(), lost.end(), node) == lost.end()) {  // rejoined meanwhile
      it = next_try_.erase(it);
      continue;
    }
    if (now < it->second) {
      ++it;
      continue;
    }
    rejoin_busy_ = true;
    backoff_s_[node] = std::min(2 * backoff_s_[node], kMaxRejoinDelay);
    it->second = now + Seconds(backoff_s_[node]);
    if (rejoin_thread_.joinable()) rejoin_thread_.join();
    AgentSpec spec = specs_[node];
    spec.stdin_payload = coord_.EnrollAgents({node}, fixed_token_);  // the first token is spent
    rejoin_thread_ = std::thread([this, node, spec] {
      auto started = std::make_shared<Result<std::unique_ptr<AgentHandle>>>(std::move(spawner_.Start({spec})[0]));
      asio::post(io_, [this, node, started] { Rejoined(node, std::move(*started)); });
    });
    return;
  }
  ArmRejoinTimer();
}

void AgentFleet::Rejoined(int node, Result<std::unique_ptr<AgentHandle>> started) {
  rejoin_busy_ = false;
  if (!started.ok()) {
    notice_(fmt::format("{} is still lost: {}; next try in {}s", specs_[node].host, started.status().message(),
                        backoff_s_[node]));
  } else {
    Member& m = members_[node];
    if (m.handle) m.handle->Terminate();  // the lost agent, or one that never registered
    m.handle = std::move(started).value();
    m.lost = false;
    ++m.incarnation;
    Watch(node);
    // Registered or not, the node starts over: if it is still lost in 2 s,
    // the next attempt replaces this agent.
    backoff_s_[node] = kFirstRejoinDelay;
    next_try_[node] = RealClock().Now() + Seconds(kFirstRejoinDelay);
  }
  ArmRejoinTimer();
}

bool AgentFleet::AnyRunning() const {
  return std::any_of(members_.begin(), members_.end(),
                     [](const Member& m) { return m.handle && !m.lost && m.handle->Running(); });
}

void AgentFleet::MarkLost(int node) {
  members_[node].lost = true;
  if (!fixed_token_.empty()) coord_.EnrollAgents({node}, fixed_token_);  // its node may start a new agent
}

void AgentFleet::Drain(Clock::duration grace) {
  draining_ = true;
  rejoin_timer_.cancel();
  if (!AnyRunning()) return TerminateAllAndStop();
  drain_timer_.expires_after(grace);
  drain_timer_.async_wait([this](boost::system::error_code ec) {
    if (!ec) TerminateAllAndStop();
  });
}

void AgentFleet::TerminateAllAndStop() {
  drain_timer_.cancel();
  for (Member& m : members_) {
    m.exit_watch.reset();
    if (m.handle) m.handle->Terminate();
  }
  io_.stop();
}

}  // namespace ds
