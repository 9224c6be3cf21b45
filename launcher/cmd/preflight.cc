#include "launcher/cmd/preflight.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <libssh/libssh.h>

#include "launcher/report/exit_status.h"
#include "launcher/cmd/plan_from_cli.h"
#include "launcher/cmd/spawner_choice.h"
#include "launcher/spawn/parallel_for.h"
#include "launcher/config/job_env.h"
#include "launcher/config/selection.h"

namespace ds {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Remote clock minus local clock, and the uncertainty (half the best round
// trip): a remote loop answers each line with its time, so the cost of
// starting a command does not count.
Result<std::pair<double, double>> ClockSkew(SshSession& s) {
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

}  // namespace

std::vector<PreflightRow> ProbeAllHosts(const Hostfile& hf, const PreflightOptions& o) {
  const size_t n = hf.hosts.size();
  std::vector<std::unique_ptr<SshSession>> sessions(n);
  std::vector<std::optional<PreflightRow>> rows(n);
  ParallelFor(n, o.ssh.fanout, [&](size_t i) {
    const HostEntry& h = hf.hosts[i];
    auto s = SshSession::Connect(SshTarget{h.name, h.user, h.ssh_port}, o.ssh);
    if (s.ok()) sessions[i] = std::move(*s);
    else rows[i] = UnreachableRow(h, s.status());
  });
  std::string master = o.master_addr;
  if (master.empty() && n > 0 && sessions[0]) master = sessions[0]->peer_address();
  ParallelFor(n, o.ssh.fanout, [&](size_t i) {
    if (!sessions[i]) return;
    const HostEntry& h = hf.hosts[i];
    auto r = sessions[i]->Run(ProbeScript(o, master, i == 0), "", 30);
    if (!r.ok()) {
      rows[i] = UnreachableRow(h, r.status());
      return;
    }
    auto skew = ClockSkew(*sessions[i]);
    if (skew.ok()) r->out += fmt::format("time={}\n", skew->first);
    rows[i] = EvaluateProbe(h, sessions[i]->peer_address(), r->out, skew.ok() ? skew->first : NAN,
                            skew.ok() ? skew->second : 0, o);
  });
  std::vector<PreflightRow> out;
  for (auto& r : rows) out.push_back(std::move(*r));
  return out;
}

// The hosts of the hostfile, narrowed by --include/--exclude/--num_nodes as
// they would be for a run.
Result<Hostfile> SelectedHosts(const CliOptions& cli) {
  const std::string path = HostfilePath(cli);
  if (path.empty())
    return Status::InvalidArgument("check: expected --hostfile FILE (the hosts to check); " + cli.default_hostfile +
                                   " (DSLAUNCH_DEFAULT_HOSTFILE) does not exist");
  auto hf = LoadHostfile(path);
  if (!hf.ok()) return Status::InvalidArgument(hf.status().message());
  DS_ASSIGN_OR_RETURN(std::vector<SelectedHost> selected, SelectHosts(*hf, cli.selection));
  Hostfile chosen;
  chosen.path = hf->path;
  for (const auto& s : selected) {
    chosen.hosts.push_back(s.host);
    chosen.hosts.back().slots = static_cast<int>(s.slots.size());
  }
  return chosen;
}

Result<int> RunPreflight(const CliOptions& cli) {
  DS_ASSIGN_OR_RETURN(Hostfile hosts, SelectedHosts(cli));
  // The job, when given, brings its ssh:, network: and working_dir, as for a
  // run (the command line still wins).
  auto job = JobFromCli(cli, /*require_job=*/false);
  if (!job.ok()) return Status::InvalidArgument(job.status().message());
  auto ssh = SshOptionsForJob(*job, cli);
  if (!ssh.ok()) return Status::InvalidArgument(ssh.status().message());
  PreflightOptions o;
  o.ssh = *ssh;
  o.agent_path = AgentPathFor(cli);
  o.ship_agent = cli.ship_agent;
  std::error_code ec;
  o.working_dir = AbsoluteWorkingDir(job->working_dir, std::filesystem::current_path(ec).string());
  o.master_addr = job->network.master_addr;
  o.master_port = job->network.master_port;
  std::vector<PreflightRow> rows = ProbeAllHosts(hosts, o);
  std::cout << FormatPreflightTable(rows);
  const bool all_ready = std::all_of(rows.begin(), rows.end(), [](const PreflightRow& r) { return r.ok(); });
  return all_ready ? kExitSuccess : kExitFailure;
}

}  // namespace ds
