#include "launcher/cmd/standby.h"

#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "common/files.h"
#include "common/log.h"
#include "launcher/cmd/job_leader.h"
#include "launcher/cmd/job_takeover.h"
#include "launcher/cmd/spawner_choice.h"

namespace ds {
namespace {

std::atomic<bool> stop_asked{false};
void AskStop(int) { stop_asked = true; }

std::string StandbyPrefix(const JobSpec& job, const std::string& job_id) {
  return JobKey(job.coordinator, job_id, "standby/");
}

Result<std::unique_ptr<etcd::Client>> ClientFor(const JobSpec& job, const std::string& job_id) {
  return etcd::Client::Create(LeaderOptions(job, job_id, "").client);
}

}  // namespace

std::vector<std::string> StandbyArgv(const CliOptions& cli, const std::string& job_id, int index,
                                     const std::string& cwd) {
  std::vector<std::string> argv = {SiblingBinary("dslaunch", "launcher"), "--standby", job_id, "--standby-index",
                                   std::to_string(index), "--standby-cwd", cwd};
  // The job's own arguments: a standby that leads starts a replacement's
  // standby (member_keeper.h) with its arguments, less its own standby's.
  for (size_t i = 0; i < cli.args.size(); ++i) {
    const std::string& a = cli.args[i];
    const bool flag = a == "--standby" || a == "--standby-index" || a == "--standby-cwd";
    if (flag) ++i;  // and its value
    if (flag || a.rfind("--standby=", 0) == 0 || a.rfind("--standby-index=", 0) == 0 ||
        a.rfind("--standby-cwd=", 0) == 0)
      continue;
    argv.push_back(a);
  }
  return argv;
}

Result<BoundPort> BindStandbyPort(const std::string& addr) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(addr.c_str(), "0", &hints, &found); rc != 0)
    return Status::InvalidArgument(fmt::format("standby: listen address '{}': {}", addr, ::gai_strerror(rc)));
  const int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const bool ok = fd >= 0 && ::bind(fd, found->ai_addr, found->ai_addrlen) == 0 && ::listen(fd, 4096) == 0;
  ::freeaddrinfo(found);
  sockaddr_storage me{};
  socklen_t len = sizeof(me);
  if (!ok || ::getsockname(fd, reinterpret_cast<sockaddr*>(&me), &len) != 0) {
    const int e = errno;
    if (fd >= 0) ::close(fd);
    return Status::IOError(fmt::format("standby: listen {}: {}", addr, std::strerror(e)));
  }
  const int port = me.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&me)->sin6_port)
                                            : ntohs(reinterpret_cast<sockaddr_in*>(&me)->sin_port);
  return BoundPort{fd, port};
}

void CatchStandbyStop() {
  struct sigaction sa {};
  sa.sa_handler = AskStop;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
}

bool StandbyStopAsked() { return stop_asked; }

Result<bool> WaitAsStandby(const JobSpec& job, int index, CoordinatorOptions& co) {
  const std::string& id = co.job_id;
  const bool started_by_leader = index >= 0;
  std::string address = "its lost coordinator's address";
  if (started_by_leader) {
    DS_ASSIGN_OR_RETURN(BoundPort bound, BindStandbyPort(co.listen_addr));
    co.listen_fd = bound.fd;  // the Coordinator adopts it once it leads
    co.listen_port = bound.port;
    const std::string& host = co.advertise_host.empty() ? co.listen_addr : co.advertise_host;
    address = fmt::format("{}:{}", host.find(':') != std::string::npos ? "[" + host + "]" : host, bound.port);
    if (Status st = AnnounceStandby(job, id, index, address); !st.ok())
      return Status::Unavailable("--standby: " + st.message());
  }
  std::cerr << fmt::format("dslaunch: standby for job {} ({}): it takes the job over when its coordinator is "
                           "lost\n", id, address);
  JobOver over(job, id, CoordinatorGrace(job.coordinator, job.elastic.heartbeat_timeout));
  auto ended = [&] { return StandbyStopAsked() || (started_by_leader ? over() : !ReadTakeoverRecord(id).ok()); };
  DS_ASSIGN_OR_RETURN(bool vacant, WaitForVacancy(job, id, ended));
  const Result<JobState> s = ReadJobState(job, id);
  if (vacant && !ended() && s.ok() && s->phase != CoordState::kDone) return true;
  // Its key is not withdrawn here: the job's leader withdraws every standby's
  // at its end, and at the job's end the members go one by one, so a delete
  // by the last standbys would wait for a quorum that is gone.
  if (StandbyStopAsked()) std::cerr << fmt::format("dslaunch: standby for job {}: ended by a signal\n", id);
  else std::cerr << fmt::format("dslaunch: standby: job {} ended (or is not running from this host); nothing to take "
                                "over\n", id);
  return false;
}

namespace {

// Standby `index` on `host`. Its stdin, one line (the ssh supervisor passes
// one on): the secret, then a tab and its brief (JSON, no newline inside).
AgentSpec StandbySpec(const StandbyLaunch& s, const NodePlan& host, int index, const std::string* brief,
                      const std::string& cwd) {
  AgentSpec a;
  a.host = host.host.name;
  a.node_index = index;
  a.ssh_port = host.host.ssh_port ? host.host.ssh_port : s.ssh.default_port;
  a.user = host.host.user;
  a.argv = StandbyArgv(s.cli, s.job_id, index, cwd);
  a.stdin_payload = brief ? s.secret + "\t" + *brief : s.secret;
  return a;
}

}  // namespace

std::vector<std::unique_ptr<AgentHandle>> StartStandbys(const StandbyLaunch& s,
                                                        const std::function<void(const std::string&)>& notice) {
  std::vector<std::unique_ptr<AgentHandle>> handles;
  if (s.launcher != "local" && s.launcher != "ssh") {
    notice(fmt::format("coordinator.standbys: the {} launcher starts no standbys yet (local and ssh do)",
                       s.launcher));
    return handles;
  }
  auto spawner = MakeSpawner(s.launcher, s.plan, s.ssh, s.cli.stop_grace, s.cli.launcher_args);
  if (!spawner.ok()) {
    notice("coordinator.standbys: " + spawner.status().message());
    return handles;
  }
  std::error_code ec;
  const std::string cwd = std::filesystem::current_path(ec).string();
  const std::vector<NodePlan> hosts = Candidates(s.plan);
  std::vector<AgentSpec> specs;
  const int count = s.briefs ? static_cast<int>(s.briefs->size()) : s.plan.job.coordinator.standbys;
  for (int k = 0; k < count && k < static_cast<int>(hosts.size()); ++k)
    specs.push_back(StandbySpec(s, hosts[static_cast<size_t>(k)], k, s.briefs ? &(*s.briefs)[static_cast<size_t>(k)] : nullptr, cwd));
  std::vector<Result<std::unique_ptr<AgentHandle>>> started = (*spawner)->Start(specs);
  for (size_t k = 0; k < started.size(); ++k) {
    if (started[k].ok()) handles.push_back(std::move(started[k]).value());
    else notice(fmt::format("coordinator.standbys: standby {} on {} did not start: {}", k, specs[k].host,
                            started[k].status().message()));
  }
  return handles;
}

Result<std::unique_ptr<AgentHandle>> StartStandbyOn(const StandbyLaunch& s, const NodePlan& host, int index,
                                                    const std::string& brief) {
  DS_ASSIGN_OR_RETURN(std::unique_ptr<Spawner> spawner,
                      MakeSpawner(s.launcher, s.plan, s.ssh, s.cli.stop_grace, s.cli.launcher_args));
  std::error_code ec;
  std::vector<Result<std::unique_ptr<AgentHandle>>> started =
      spawner->Start({StandbySpec(s, host, index, &brief, std::filesystem::current_path(ec).string())});
  return std::move(started.front());
}

void WaitForStandbysToEnd(const std::vector<std::unique_ptr<AgentHandle>>& standbys, std::chrono::seconds limit) {
  std::vector<pollfd> fds;
  for (const auto& s : standbys) fds.push_back({s->exit_fd(), POLLIN, 0});
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!fds.empty() && std::chrono::steady_clock::now() < until) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
    if (::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(left, 1))) < 0 && errno != EINTR) break;
    fds.erase(std::remove_if(fds.begin(), fds.end(), [](const pollfd& p) { return p.revents != 0; }), fds.end());
  }
}

const StandbyInput& ReadStandbyInput() {
  static const StandbyInput input = [] {
    StandbyInput in;
    std::string line;
    std::getline(std::cin, line);
    const size_t tab = line.find('\t');
    in.secret = line.substr(0, tab);
    if (tab != std::string::npos) in.brief = line.substr(tab + 1);
    return in;
  }();
  return input;
}

Status AnnounceStandby(const JobSpec& job, const std::string& job_id, int index, const std::string& address) {
  DS_ASSIGN_OR_RETURN(std::unique_ptr<etcd::Client> client, ClientFor(job, job_id));
  return client->Put(StandbyPrefix(job, job_id) + std::to_string(index), address).status();
}

void WithdrawStandby(const JobSpec& job, const std::string& job_id, int index) {
  Result<std::unique_ptr<etcd::Client>> client = ClientFor(job, job_id);
  if (!client.ok()) return;
  const std::string prefix = StandbyPrefix(job, job_id);
  if (index >= 0) (void)(*client)->Delete(prefix + std::to_string(index));
  else (void)(*client)->Delete(prefix, etcd::PrefixEnd(prefix));
}

Result<std::unique_ptr<StandbyWatch>> StandbyWatch::Start(const JobSpec& job, const std::string& job_id,
                                                          std::function<void(std::vector<std::string>)> changed) {
  std::unique_ptr<StandbyWatch> w(new StandbyWatch);
  DS_ASSIGN_OR_RETURN(w->client_, ClientFor(job, job_id));
  w->prefix_ = StandbyPrefix(job, job_id);
  w->changed_ = std::move(changed);
  w->thread_ = std::thread([p = w.get()] { p->Loop(); });
  return w;
}

StandbyWatch::~StandbyWatch() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
}

// A Range, then a watch from just after it; every event reads the range
// again (a handful of keys), so what `changed` gets is always whole.
void StandbyWatch::Loop() {
  std::vector<std::string> last;
  bool first = true;
  while (!stopping_) {
    Result<etcd::RangeResponse> r = client_->Range(etcd::RangeRequest{prefix_, etcd::PrefixEnd(prefix_)});
    if (!r.ok()) {
      DS_LOG(Debug, Coord) << "standbys: " << r.status().message();
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      continue;
    }
    std::vector<std::string> now;
    for (const etcd::KeyValue& kv : r->kvs) now.push_back(kv.value);
    if (first || now != last) changed_(now);
    first = false;
    last = std::move(now);
    auto watch = client_->WatchKey(etcd::WatchRequest{prefix_, etcd::PrefixEnd(prefix_), r->header.revision + 1});
    if (!watch.ok()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      continue;
    }
    while (!stopping_) {
      Result<etcd::WatchResponse> e = (*watch)->Next(1.0);
      if (e.ok() && !e->events.empty()) break;                            // read the range again
      if (!e.ok() && e.status().code() != Status::Code::kTimeout) break;  // the stream broke
    }
  }
}

}  // namespace ds
