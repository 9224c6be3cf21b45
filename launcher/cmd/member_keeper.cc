#include "launcher/cmd/member_keeper.h"

#include <poll.h>

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/clock.h"
#include "launcher/cmd/job_leader.h"
#include "launcher/cmd/job_replicas.h"
#include "launcher/cmd/standby.h"
#include "launcher/failover/replica_brief.h"

namespace ds {
namespace {

using Steady = std::chrono::steady_clock;

constexpr auto kLookEvery = std::chrono::seconds(1);
constexpr double kProbeTimeout = 1.5;  // one member alone, one read
constexpr auto kStandbysEnd = std::chrono::seconds(10);

// "https://10.0.0.1:2380" or "https://[fd00::1]:2380": its address and port; false otherwise.
bool SplitUrl(const std::string& url, std::string& ip, int& port) {
  const size_t scheme = url.find("://");
  const std::string rest = scheme == std::string::npos ? url : url.substr(scheme + 3);
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  ip = rest.substr(0, colon);
  if (ip.front() == '[' && ip.back() == ']') ip = ip.substr(1, ip.size() - 2);
  try {
    port = std::stoi(rest.substr(colon + 1));
  } catch (...) {
    return false;
  }
  return port > 0 && port <= 65535;
}

// The member's address, "" when it has no peer URL we can read.
std::string IpOf(const etcd::Member& m) {
  std::string ip;
  int port = 0;
  return !m.peer_urls.empty() && SplitUrl(m.peer_urls.front(), ip, port) ? ip : "";
}

// A started member as the brief names it; false when it is not one (no name or URLs yet).
bool AsReplicaMember(const etcd::Member& m, failover::ReplicaMember& out) {
  if (m.name.empty() || m.peer_urls.empty() || m.client_urls.empty()) return false;
  std::string client_ip;
  out.name = m.name;
  return SplitUrl(m.peer_urls.front(), out.ip, out.peer_port) &&
         SplitUrl(m.client_urls.front(), client_ip, out.client_port);
}

std::string Shown(const etcd::Member& m) {
  return fmt::format("{} ({})", m.name.empty() ? "unstarted" : m.name, m.peer_urls.empty() ? "?" : m.peer_urls.front());
}

}  // namespace

std::unique_ptr<MemberKeeper> MemberKeeper::Start(MemberKeeperOptions o) {
  std::unique_ptr<MemberKeeper> k(new MemberKeeper(std::move(o)));
  for (const NodePlan& h : k->o_.hosts) {
    Result<std::string> ip = MemberAddressOf(h.host.name);
    k->host_ips_.push_back(ip.ok() ? *ip : "");
  }
  k->thread_ = std::thread([p = k.get()] { p->Loop(); });
  return k;
}

MemberKeeper::~MemberKeeper() {
  RequestStop();
  if (thread_.joinable()) thread_.join();
  WaitForStandbysToEnd(standbys_, kStandbysEnd);
}

void MemberKeeper::RequestStop() {
  std::lock_guard<std::mutex> lock(mu_);
  stop_ = true;
  cv_.notify_all();
}

void MemberKeeper::Loop() {
  while (!Stopping()) {
    Look();
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, kLookEvery, [&] { return stop_.load(); });
  }
}

bool MemberKeeper::Connect(const std::vector<std::string>& endpoints) {
  etcd::ClientOptions co = LeaderOptions(o_.job, o_.job_id, "").client;
  co.endpoints = endpoints;
  Result<std::unique_ptr<etcd::Client>> made = etcd::Client::Create(co);
  if (!made.ok()) return false;
  client_ = std::move(made).value();
  endpoints_ = endpoints;
  return true;
}

bool MemberKeeper::Answers(const std::string& client_url) {
  std::unique_ptr<etcd::Client>& c = probes_[client_url];
  if (!c) {
    etcd::ClientOptions co = LeaderOptions(o_.job, o_.job_id, "").client;
    co.endpoints = {client_url};
    co.timeout_s = kProbeTimeout;
    Result<std::unique_ptr<etcd::Client>> made = etcd::Client::Create(co);
    if (!made.ok()) return false;
    c = std::move(made).value();
  }
  return c->Get(LeaderOptions(o_.job, o_.job_id, "").state_key, /*serializable=*/true).ok();
}

void MemberKeeper::Look() {
  if (!client_ && !Connect(LeaderOptions(o_.job, o_.job_id, "").client.endpoints)) return;
  Result<etcd::MembersResponse> list = client_->MemberList();
  if (!list.ok()) return;  // etcd busy or cut off: the next look
  std::vector<std::string> urls;
  for (const etcd::Member& m : list->members)
    for (const std::string& u : m.client_urls) urls.push_back(u);
  if (!urls.empty() && urls != endpoints_) Connect(urls);  // a member came or went: the client follows
  const auto now = Steady::now();
  const etcd::Member* lost = nullptr;
  for (const etcd::Member& m : list->members) {
    if (Stopping()) return;
    const bool answers = !m.client_urls.empty() && Answers(m.client_urls.front());
    if (answers) {
      silent_since_.erase(m.id);
      continue;
    }
    // One that never started (etcd knows its client URLs once it has) may still be starting:
    // a slow ssh, a loaded host. It has the time a new member has.
    const auto since = silent_since_.emplace(m.id, now).first->second;
    const double limit = m.client_urls.empty() ? o_.form_timeout_s : o_.lost_after_s;
    if (!lost && now - since >= Seconds(limit)) lost = &m;
  }
  std::vector<etcd::Member> members = list->members;
  if (lost && RemoveLost(*lost, members))
    std::erase_if(members, [id = lost->id](const etcd::Member& m) { return m.id == id; });
  if (static_cast<int>(members.size()) < o_.replicas && !Stopping()) Grow(members);
}

int MemberKeeper::NextIndex(const std::vector<etcd::Member>& members) {
  auto bump = [&](const std::string& digits) {
    try {
      next_index_ = std::max(next_index_, std::stoi(digits) + 1);
    } catch (...) {
    }
  };
  for (const etcd::Member& m : members)
    if (m.name.size() > 1 && m.name[0] == 'm') bump(m.name.substr(1));
  // The standbys announced so far, lost ones too: a host that comes back
  // keeps its old member's files under that member's name.
  const std::string prefix = JobKey(o_.job.coordinator, o_.job_id, "standby/");
  etcd::RangeRequest r{prefix, etcd::PrefixEnd(prefix)};
  if (Result<etcd::RangeResponse> got = client_->Range(r); got.ok())
    for (const etcd::KeyValue& kv : got->kvs) bump(kv.key.substr(prefix.size()));
  return next_index_++;
}

size_t MemberKeeper::FreeHost(const std::vector<etcd::Member>& members) const {
  std::set<std::string> taken;  // the hosts that run a member
  for (const etcd::Member& m : members) taken.insert(IpOf(m));
  for (size_t h = 0; h < host_ips_.size(); ++h)
    if (!host_ips_[h].empty() && !taken.count(host_ips_[h]) && !spent_hosts_.count(h)) return h;
  return host_ips_.size();
}

bool MemberKeeper::RemoveLost(const etcd::Member& lost, const std::vector<etcd::Member>& members) {
  for (size_t h = 0; h < host_ips_.size(); ++h)
    if (host_ips_[h] == IpOf(lost)) spent_hosts_.insert(h);  // it lost one: not where the next goes
  if (FreeHost(members) == host_ips_.size()) {
    size_t answering = 0;
    for (const etcd::Member& m : members) answering += !silent_since_.count(m.id);
    if (said_.insert(lost.id).second)
      o_.notice(fmt::format("coordinator.replicas: member {} is lost, and no host of the job is left to run another "
                            "(each runs one or failed to): the job's etcd goes on with {} of {} members answering",
                            Shown(lost), answering, members.size()));
    return false;
  }
  if (Result<etcd::MembersResponse> removed = client_->MemberRemove(lost.id); !removed.ok()) {
    if (said_.insert(lost.id).second)
      o_.notice(fmt::format("coordinator.replicas: member {} is lost but cannot be removed yet: {}; trying again",
                            Shown(lost), removed.status().message()));
    return false;
  }
  replacing_ = Shown(lost);
  lost_at_ = silent_since_[lost.id];  // the line says how long from its first unanswered read
  silent_since_.erase(lost.id);
  return true;
}

void MemberKeeper::Grow(const std::vector<etcd::Member>& members) {
  const size_t host = FreeHost(members);
  if (host == host_ips_.size()) return;  // RemoveLost said so
  const NodePlan& where = o_.hosts[host];
  const int index = NextIndex(members);
  const failover::ReplicaMember fresh = NewMember(index, host_ips_[host]);
  Result<etcd::MembersResponse> added = client_->MemberAdd({failover::PeerUrl(fresh)});
  if (!added.ok()) {  // etcd wants its members connected a while first ("unhealthy cluster"): the next look
    if (!std::exchange(said_add_, true))
      o_.notice(fmt::format("coordinator.replicas: no member added yet: {}; trying again", added.status().message()));
    return;
  }
  said_add_ = false;
  auto fail = [&](const std::string& why) {
    spent_hosts_.insert(host);
    (void)client_->MemberRemove(added->added.id);
    o_.notice(fmt::format("coordinator.replicas: the new member {} on {} did not join: {}; another host is tried",
                          fresh.name, where.host.name, why));
  };
  // The brief names every member as etcd has them now, the new one last.
  std::vector<failover::ReplicaMember> now;
  for (const etcd::Member& m : added->members) {
    if (m.id == added->added.id) continue;
    failover::ReplicaMember r;
    if (!AsReplicaMember(m, r)) return fail("another member has not started: " + Shown(m));
    now.push_back(r);
  }
  now.push_back(fresh);
  Result<std::string> brief = MemberBrief(*o_.ca, now, static_cast<int>(now.size()) - 1, o_.job_id,
                                          /*join_existing=*/true);
  if (!brief.ok()) return fail(brief.status().message());
  Result<std::unique_ptr<AgentHandle>> standby = o_.start(where, index, *brief);
  if (!standby.ok()) return fail(standby.status().message());
  const std::string client_url = failover::ClientUrl(fresh);
  const auto until = Steady::now() + Seconds(o_.form_timeout_s);
  bool serves = false;
  while (!Stopping() && Steady::now() < until && !(serves = Answers(client_url))) {
    pollfd p{(*standby)->exit_fd(), POLLIN, 0};
    if (::poll(&p, 1, 200) > 0) break;  // its standby ended: the member with it
  }
  if (!serves) {
    const int status = (*standby)->ExitStatus();
    standby->reset();  // ends it, if it still runs
    return fail(Stopping() ? "the job ended first"
                : Steady::now() >= until ? fmt::format("it did not serve within {:.0f} s", o_.form_timeout_s)
                                         : fmt::format("its standby ended (status {})", status));
  }
  standbys_.push_back(std::move(standby).value());
  o_.notice(fmt::format("coordinator.replicas: member {} was lost; {} on {} replaces it ({:.1f} s): the job's etcd "
                        "has {} members again",
                        replacing_.empty() ? "(one)" : replacing_, fresh.name, where.host.name,
                        std::chrono::duration<double>(Steady::now() - lost_at_).count(), now.size()));
  replacing_.clear();
}

}  // namespace ds
