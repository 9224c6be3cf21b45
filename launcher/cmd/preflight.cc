#include "launcher/cmd/preflight.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "launcher/report/exit_status.h"
#include "launcher/cmd/plan_from_cli.h"
#include "launcher/cmd/preflight_srun.h"
#include "launcher/cmd/spawner_choice.h"
#include "launcher/spawn/parallel_for.h"
#include "launcher/spawn/ssh/ssh_probe.h"
#include "launcher/config/job_env.h"
#include "launcher/config/selection.h"

namespace ds {
namespace {

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
    auto skew = MeasureClockSkew(*sessions[i]);
    if (skew.ok()) r->out += fmt::format("time={}\n", skew->first);
    rows[i] = EvaluateProbe(h, sessions[i]->peer_address(), r->out, skew.ok() ? skew->first : NAN,
                            skew.ok() ? skew->second : 0, o);
  });
  std::vector<PreflightRow> out;
  for (auto& r : rows) out.push_back(std::move(*r));
  return out;
}

// This machine's probe, run here: what `check` asks of hosts whose agents
// would run locally (no ssh, no clock to compare).
PreflightRow ProbeLocally(const HostEntry& h, const PreflightOptions& o, bool is_first) {
  const std::string master = o.master_addr.empty() ? "127.0.0.1" : o.master_addr;
  auto out = RunCommandForOutput({"/bin/sh", "-c", ProbeScript(o, master, is_first)});
  if (!out.ok()) return UnreachableRow(h, out.status());
  PreflightRow row = EvaluateProbe(h, "", *out + "time=0\n", 0.0, 0.0, o);  // this machine's own clock
  row.ssh = {true, "local, no ssh"};
  row.clock = {true, "this one"};
  return row;
}

// The hosts a run would use: the Slurm allocation's (as PlanFromCli decides),
// else the hostfile's (--hostfile, else DSLAUNCH_DEFAULT_HOSTFILE when it
// exists), narrowed by --include/--exclude/--num_nodes, or without one this
// machine.
Result<Hostfile> SelectedHosts(const CliOptions& cli) {
  const MachineFacts local = DetectLocalMachine();
  const bool slurm = UseSlurmAllocation(cli, local);
  const std::string path = slurm ? kSlurmNodelist : HostfilePath(cli);
  if (path.empty()) {
    Hostfile here;
    here.hosts.push_back(HostEntry{.name = "localhost", .slots = local.gpus > 0 ? local.gpus : local.cpus});
    return here;
  }
  auto hf = slurm ? SlurmHostfile(SlurmEnvFrom(local.env), RunCommandForOutput) : LoadHostfile(path);
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

// How a run would start the agents on `hosts` (ResolveLauncher, and the
// spawner's refusals such as --launcher local with a remote host).
Result<std::string> LauncherFor(const Hostfile& hosts, const CliOptions& cli) {
  LaunchPlan plan;
  plan.hostfile_path = hosts.path;
  for (const HostEntry& h : hosts.hosts) plan.nodes.push_back(NodePlan{.host = h});
  const std::string launcher = ResolveLauncher(cli.launcher, plan, cli.force_multi);
  DS_RETURN_IF_ERROR(CheckSpawner(launcher, plan, cli.launcher_args));
  return launcher;
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
  JobChecksFor(job->command, "", o);  // which script; then its imports, read from here
  if (!o.job_script.empty()) {
    const std::filesystem::path script = std::filesystem::path(o.working_dir) / o.job_script;
    std::ifstream in(script);
    std::string text(1 << 20, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
    JobChecksFor(job->command, text, o);
  }
  DS_ASSIGN_OR_RETURN(const std::string launcher, LauncherFor(hosts, cli));
  std::vector<PreflightRow> rows;
  if (launcher == "local") {
    for (size_t i = 0; i < hosts.hosts.size(); ++i) rows.push_back(ProbeLocally(hosts.hosts[i], o, i == 0));
  } else if (launcher == "slurm") {
    rows = ProbeWithSrun(hosts, o, RunCommandForOutput);
  } else {  // ssh, pdsh, openmpi and mpich all need the hosts to answer ssh for this check
    rows = ProbeAllHosts(hosts, o);
  }
  std::cout << FormatPreflightTable(rows);
  const bool all_ready = std::all_of(rows.begin(), rows.end(), [](const PreflightRow& r) { return r.ok(); });
  return all_ready ? kExitSuccess : kExitFailure;
}

}  // namespace ds
