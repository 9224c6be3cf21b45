#include "launcher/cmd/standby.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/files.h"
#include "common/log.h"
#include "launcher/cmd/job_leader.h"

namespace ds {
namespace {

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
  argv.insert(argv.end(), cli.args.begin(), cli.args.end());
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
