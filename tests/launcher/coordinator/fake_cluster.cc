#include "tests/launcher/coordinator/fake_cluster.h"

#include <algorithm>
#include <stdexcept>

namespace ds::test {

namespace {
LaunchPlan PlanFor(const std::string& hostfile, const JobSpec& job) {
  Hostfile hf = ParseHostfile(hostfile, "hostfile").value();
  std::vector<SelectedHost> hosts = SelectHosts(hf, SelectionOptions{}).value();
  return MakePlan(hosts, job, /*use_gpus=*/false).value();
}

Frame MakeFrame(wire::MsgType type, const Bytes& payload) {
  Frame f;
  f.type = type;
  f.payload = payload;
  return f;
}
}  // namespace

FakeCluster::FakeCluster(const std::string& hostfile, const JobSpec& job, CoordinatorOptions options)
    : plan_(PlanFor(hostfile, job)), record_(nullptr, clock_) {
  options.job_id = "job";
  if (options.run_id.empty()) options.run_id = "feed0001";
  options.secret = "secret";
  options.argv = {"/bin/true"};
  options.heartbeat_interval = job.elastic.heartbeat_interval;
  options.heartbeat_timeout = job.elastic.heartbeat_timeout;
  options.notice = [this](const std::string& text) { notices_.push_back(text); };
  const size_t n = Candidates(plan_).size();
  links_.resize(n);
  silent_.assign(n, false);
  for (auto& l : links_) l = std::make_shared<FakeLink>();
  control_ = std::make_unique<JobControl>(plan_, options, record_, store_, clock_, timer_);
  control_->OnDone([this] { done_ = true; });
  control_->Start("127.0.0.1:7000", fleet_);
}

void FakeCluster::Register(int node) {
  links_[node] = std::make_shared<FakeLink>();
  silent_[node] = false;
  msg::Register r;
  r.node_index = static_cast<uint32_t>(node);
  r.host = Candidates(plan_)[node].host.name;
  r.hostname = "machine-" + r.host;  // what gethostname() would say there
  r.addr = "10.0.0." + std::to_string(node + 1);
  r.ifname = "eth0";
  r.cpus = 4;
  Status st = control_->OnRegister(r, links_[node]);
  if (!st.ok()) throw std::runtime_error("register refused: " + st.message());
}

void FakeCluster::RegisterAll() {
  for (size_t i = 0; i < links_.size(); ++i) Register(static_cast<int>(i));
}

void FakeCluster::Reserve(int port) {
  const int gen = control_->generation();
  for (size_t i = 0; i < links_.size(); ++i) {
    auto r = Last<msg::Reserve>(static_cast<int>(i), wire::MsgType::kReserve);
    if (!r || static_cast<int>(r->generation) != gen) continue;
    msg::Reserved m;
    m.generation = r->generation;
    m.port = static_cast<uint32_t>(port);
    (void)control_->OnAgentFrame(static_cast<int>(i), MakeFrame(wire::MsgType::kReserved, m.Encode()));
    return;
  }
  throw std::runtime_error("no Reserve for the current generation");
}

void FakeCluster::StartWorkers() {
  const int gen = control_->generation();
  for (int node : NodesRunning()) {
    auto a = Last<msg::Assign>(node, wire::MsgType::kAssign);
    for (const auto& w : a->workers) {
      msg::WorkerStarted m{static_cast<uint32_t>(gen), w.rank, 1000 + w.rank};
      (void)control_->OnAgentFrame(node, MakeFrame(wire::MsgType::kWorkerStarted, m.Encode()));
    }
  }
}

void FakeCluster::Exit(int rank, int code, int signal) {
  msg::WorkerExited m;
  m.generation = static_cast<uint32_t>(control_->generation());
  m.rank = rank;
  m.pid = 1000 + rank;
  m.exit_code = code;
  m.signal = signal;
  (void)control_->OnAgentFrame(NodeOfRank(rank), MakeFrame(wire::MsgType::kWorkerExited, m.Encode()));
}

void FakeCluster::ConfirmStops() {
  const int gen = control_->generation();
  for (size_t i = 0; i < links_.size(); ++i) {
    auto s = Last<msg::Stop>(static_cast<int>(i), wire::MsgType::kStop);
    if (!s || static_cast<int>(s->generation) != gen || links_[i]->closed() || silent_[i]) continue;
    msg::Stopped m{s->generation};
    (void)control_->OnAgentFrame(static_cast<int>(i), MakeFrame(wire::MsgType::kStopped, m.Encode()));
  }
}

void FakeCluster::Send(int node, wire::MsgType type, const Bytes& payload) {
  Status st = control_->OnAgentFrame(node, MakeFrame(type, payload));
  if (!st.ok()) throw std::runtime_error("frame refused: " + st.message());
}

void FakeCluster::Drop(int node, const std::string& reason) {
  links_[node]->Close(reason);
  control_->OnAgentClosed(node, reason);
}

void FakeCluster::Advance(double seconds) {
  const double step = plan_.job.elastic.heartbeat_interval;
  for (double left = seconds; left > 1e-9; left -= step) {
    timer_.Advance(Seconds(std::min(step, left)));
    for (size_t i = 0; i < links_.size(); ++i) {
      if (silent_[i] || links_[i]->closed() || !control_->NodeRegistered(static_cast<int>(i))) continue;
      (void)control_->OnAgentFrame(static_cast<int>(i), MakeFrame(wire::MsgType::kPing, msg::Ping{}.Encode()));
    }
  }
}

void FakeCluster::EchoPings(const std::vector<double>& delays) {
  std::vector<std::pair<double, int>> order;
  std::vector<uint64_t> stamps;
  for (size_t n = 0; n < delays.size(); ++n) {
    order.emplace_back(delays[n], static_cast<int>(n));
    stamps.push_back(Last<msg::Ping>(static_cast<int>(n), wire::MsgType::kPing)->sent_micros);
  }
  std::sort(order.begin(), order.end());
  double at = 0;
  for (const auto& [delay, node] : order) {
    clock_.Advance(Seconds(delay - at));  // no Ping of the agents' own in between
    at = delay;
    Send(node, wire::MsgType::kPing, msg::Ping{0, stamps[static_cast<size_t>(node)]}.Encode());
  }
}

int FakeCluster::Count(int node, wire::MsgType type) const {
  const auto& sent = links_[node]->sent;
  return static_cast<int>(std::count_if(sent.begin(), sent.end(), [&](const auto& m) { return m.first == type; }));
}

std::vector<int> FakeCluster::NodesRunning() const {
  std::vector<int> out;
  const int gen = control_->generation();
  for (size_t i = 0; i < links_.size(); ++i) {
    auto a = Last<msg::Assign>(static_cast<int>(i), wire::MsgType::kAssign);
    if (a && static_cast<int>(a->generation) == gen && !a->workers.empty()) out.push_back(static_cast<int>(i));
  }
  return out;
}

int FakeCluster::NodeOfRank(int rank) const {
  for (int node : NodesRunning()) {
    auto a = Last<msg::Assign>(node, wire::MsgType::kAssign);
    for (const auto& w : a->workers)
      if (w.rank == rank) return node;
  }
  // A generation taken over (JobControl::Adopt) had no Assign here: its agents said where.
  if (auto w = record_.workers().find(rank); w != record_.workers().end()) return w->second.node;
  throw std::runtime_error("no node runs rank " + std::to_string(rank));
}

}  // namespace ds::test
