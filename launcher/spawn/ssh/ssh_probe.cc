#include "launcher/spawn/ssh/ssh_probe.h"

#include <netdb.h>

#include <chrono>
#include <cmath>
#include <cstdlib>

#include <libssh/libssh.h>

#include <fmt/format.h>

#include "common/check.h"
#include "launcher/spawn/parallel_for.h"

namespace ds {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

Result<std::pair<double, double>> MeasureClockSkew(SshSession& s) {
  ssh_channel ch = ssh_channel_new(s.raw());
  if (ch == nullptr) return Status::IOError(s.host() + ": cannot open a channel");
  struct Closer {
    ssh_channel c;
    ~Closer() { ssh_channel_close(c); ssh_channel_free(c); }
  } closer{ch};
  if (ssh_channel_open_session(ch) != SSH_OK ||
      ssh_channel_request_exec(ch, "while read x; do date +%s.%N; done") != SSH_OK)
    return Status::IOError(s.host() + ": cannot run date");
  double best_rtt = 1e9, best_skew = NAN;
  for (int i = 0; i < 3; ++i) {
    double t0 = Now();
    if (ssh_channel_write(ch, "x\n", 2) != 2) break;
    std::string line;
    char buf[64];
    while (line.find('\n') == std::string::npos) {
      int n = ssh_channel_read_timeout(ch, buf, sizeof(buf), 0, 5000);
      if (n <= 0) break;
      line.append(buf, n);
    }
    double t1 = Now();
    double remote = std::strtod(line.c_str(), nullptr);
    if (remote <= 0) break;
    if (t1 - t0 < best_rtt) {
      best_rtt = t1 - t0;
      best_skew = remote - (t0 + t1) / 2;
    }
  }
  ssh_channel_send_eof(ch);
  if (!std::isfinite(best_skew)) return Status::IOError(s.host() + ": cannot read the clock");
  return std::make_pair(best_skew, best_rtt / 2);
}


bool ElasticStartAllowed(const LaunchPlan& plan) {
  const ElasticOptions& el = plan.job.elastic;
  return el.min_nodes_set && el.min_nodes < static_cast<int>(plan.nodes.size());
}

std::vector<Status> ProbeNodes(const std::vector<NodePlan>& nodes, const SshOptions& options) {
  std::vector<Status> out(nodes.size());
  ParallelFor(nodes.size(), options.fanout, [&](size_t i) {
    const HostEntry& h = nodes[i].host;
    auto s = SshSession::Connect(SshTarget{h.name, h.user, h.ssh_port}, options);
    out[i] = s.ok() ? Status::OK() : s.status();
  });  // sessions close here; the spawner opens its own
  return out;
}

Status CheckNodesResolve(const std::vector<NodePlan>& nodes, const SshOptions& options) {
  std::vector<std::string> why(nodes.size());
  ParallelFor(nodes.size(), options.fanout, [&](size_t i) {
    const HostEntry& h = nodes[i].host;
    const std::string name = h.addr.empty() ? SshHostName(h.name, options) : h.addr;
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const int rc = ::getaddrinfo(name.c_str(), nullptr, &hints, &res);
    if (res) ::freeaddrinfo(res);
    if (rc != 0) why[i] = fmt::format("{} ({})", h.name, ::gai_strerror(rc));
  });
  std::vector<std::string> failed;
  for (std::string& w : why)
    if (!w.empty()) failed.push_back(std::move(w));
  if (failed.empty()) return Status::OK();
  return Status::InvalidArgument(fmt::format("{} host{} do{} not resolve: {}", failed.size(),
                                             failed.size() == 1 ? "" : "s", failed.size() == 1 ? "es" : "",
                                             fmt::join(failed, ", ")));
}

}  // namespace ds
