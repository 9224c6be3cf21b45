#include "launcher/cmd/dry_run.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/strings.h"
#include "launcher/config/coordinator_spec.h"

namespace ds {
namespace {

// Placeholder values for what only the launch knows.
constexpr const char* kAtLaunch = "(reserved at launch)";

std::string Range(int first, int count) {
  if (count == 1) return std::to_string(first);
  return std::to_string(first) + "-" + std::to_string(first + count - 1);
}

std::string Join(const std::vector<int>& v) {
  std::string out;
  for (int x : v) out += (out.empty() ? "" : ",") + std::to_string(x);
  return out;
}

std::string CommandLine(const JobSpec& job) {
  if (job.command.empty()) return "dstrain (the built-in trainer, configured by the job's trainer: section)";
  std::vector<std::string> argv;
  for (const auto& a : job.command) argv.push_back(ShellQuote(a));
  if (job.local_rank_arg) {  // where the agent puts it (agent_session.cc)
    const bool inside = job.local_rank_at >= 0 && static_cast<size_t>(job.local_rank_at) <= argv.size();
    argv.insert(inside ? argv.begin() + job.local_rank_at : argv.end(), "--local_rank=(LOCAL_RANK)");
  }
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

std::string HostfileLine(const LaunchPlan& plan, const DryRunOptions& opts) {
  if (plan.hostfile_path.empty()) return "  hostfile: none, this machine\n";
  std::string out = "  hostfile: " + plan.hostfile_path;
  if (!opts.hostfile_source.empty() && opts.hostfile_source != "--hostfile")
    out += " (" + opts.hostfile_source + ", no --hostfile given)";
  return out + "\n";
}

std::string Origin(const HostEntry& h, const std::string& path) {
  if (h.line == 0) return "this machine";
  return path + ":" + std::to_string(h.line);
}

// " (shared)" or " (per node, not shared; snapshots in the agents' memory, 1 replica)".
std::string CheckpointMode(const CheckpointOptions& ck, int nodes) {
  const int r = ck.Replicas(nodes);
  std::string out = ck.SharedDir() ? " (shared" : " (per node, not shared";
  if (ck.Snapshots(nodes))
    out += fmt::format("; snapshots in the agents' memory, {} replica{}", r, r == 1 ? "" : "s");
  return out + ")";
}

// The lines about the whole job: size, job, hostfile, directories, elastic bounds.
std::string Header(const LaunchPlan& plan, const DryRunOptions& opts) {
  const JobSpec& job = plan.job;
  std::string out = "dslaunch dry run: " + std::to_string(plan.nodes.size()) + " node(s), " +
                    std::to_string(plan.world_size) + " worker(s), launcher " + opts.launcher + "\n";
  out += "  job: " + (job.path.empty() ? std::string("from the command line") : job.path) + "\n";
  out += HostfileLine(plan, opts);
  if (!job.working_dir.empty()) out += "  working dir: " + job.working_dir + "\n";
  if (!job.log_dir.empty()) out += "  log dir: " + job.log_dir + "\n";
  if (job.pty) out += "  pty: each worker's stdout and stderr are pseudo-terminals (TERM and size from this terminal)\n";
  if (!job.checkpoint.dir.empty()) out += "  checkpoint dir: " + job.checkpoint.dir + CheckpointMode(job.checkpoint, static_cast<int>(plan.nodes.size())) + "\n";
  if (job.bind_cores)
    out += "  bind cores: each local rank to its share of " +
           (job.core_list.empty() ? std::string("the node's cores") : "cores " + job.core_list) + "\n";
  const ElasticOptions& el = job.elastic;
  out += "  elastic: min_nodes " + std::to_string(el.min_nodes) + ", max_nodes " +
         (el.max_nodes > 0 ? std::to_string(el.max_nodes) : std::string("all")) + ", max_restarts " +
         std::to_string(el.max_restarts) + "\n";
  if (const CoordinatorSpec& co = job.coordinator; !co.etcd.empty()) {
    std::string tls = co.cert.empty() ? "no client certificate" : "client certificate " + co.cert;
    if (!co.ca.empty()) tls += ", CA " + co.ca;
    out += fmt::format("  coordinator: leads the job in etcd {} ({}), keys under {}<job id>/; no standby takes "
                       "over yet\n",
                       fmt::join(co.etcd, ", "), tls, co.prefix);
  }
  return out;
}

// One line per standby host.
std::string Standbys(const LaunchPlan& plan) {
  std::string out;
  for (const NodePlan& node : plan.standbys) {
    out += "\nstandby: " + node.host.name + " (" + Origin(node.host, plan.hostfile_path) + "), slots " +
           Join(node.slots) + " (joins when a node is lost; elastic.max_nodes " +
           std::to_string(plan.job.elastic.max_nodes) + ")\n";
  }
  return out;
}

// --dry-run=short: the master and the command once, then one line per node.
std::string ShortNodes(const LaunchPlan& plan, const GenerationInfo& gen, const DryRunOptions& opts) {
  std::string master_addr, master_port;
  for (const auto& [k, v] : WorkerEnv(plan, 0, 0, gen, opts.inherited)) {
    if (k == "MASTER_ADDR") master_addr = v;
    if (k == "MASTER_PORT") master_port = v == "0" ? kAtLaunch : v;
  }
  std::string out = "  master: " + master_addr + ":" + master_port + "\n";
  out += "  command: " + CommandLine(plan.job) + "\n";
  for (const NodePlan& node : plan.nodes) {
    out += "node " + std::to_string(node.node_rank) + ": " + node.host.name + " (" +
           Origin(node.host, plan.hostfile_path) + "), ranks " + Range(node.first_rank, node.num_workers()) +
           ", slots " + Join(node.slots);
    if (!node.host.user.empty()) out += ", ssh user " + node.host.user;
    if (node.host.ssh_port) out += ", ssh port " + std::to_string(*node.host.ssh_port);
    out += "\n";
  }
  return out;
}

}  // namespace

bool IsSecretName(const std::string& name) {
  std::string up = name;
  std::transform(up.begin(), up.end(), up.begin(), ::toupper);
  for (const char* w : {"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "PRIVATE"})
    if (up.find(w) != std::string::npos) return true;
  return up == "KEY" || up.ends_with("_KEY") || up.ends_with("APIKEY");
}

std::string FormatDryRun(const LaunchPlan& plan, const DryRunOptions& opts) {
  const JobSpec& job = plan.job;
  std::string out = Header(plan, opts);
  GenerationInfo gen;  // what a real generation would fill in
  gen.job_id = "(assigned at launch)";
  gen.store_addr = "(the coordinator, at launch)";
  gen.store_token = "(per generation)";
  gen.heartbeat_addr = "(the node's agent, at launch)";
  gen.socket_ifname = "(detected on the node at launch)";
  if (opts.short_form)
    return out + ShortNodes(plan, gen, opts) + Standbys(plan) + "(every variable of every node: --dry-run)\n";
  // Said once, here: the one way a job differs between one machine and two.
  out += opts.launcher.starts_with("local")
             ? "  environment: the variables below, and the rest of this shell's environment (the local launcher "
               "passes it on; over ssh a worker gets only the variables below and the node's login environment: "
               "docs/usage.md, \"Environment variables\")\n"
             : "  environment: the variables below and the node's login environment (not the rest of this shell's: "
               "docs/usage.md, \"Environment variables\")\n";
  for (size_t i = 0; i < plan.nodes.size(); ++i) {
    const NodePlan& node = plan.nodes[i];
    out += "\nnode " + std::to_string(node.node_rank) + ": " + node.host.name + " (" +
           Origin(node.host, plan.hostfile_path) + "), ranks " + Range(node.first_rank, node.num_workers()) +
           ", slots " + Join(node.slots) + "\n";
    if (node.host.ssh_port || !node.host.user.empty()) {
      out += "  ssh:";
      if (!node.host.user.empty()) out += " user " + node.host.user;
      if (node.host.ssh_port) out += " port " + std::to_string(*node.host.ssh_port);
      out += "\n";
    }
    out += "  per worker: RANK=ROLE_RANK=" + Range(node.first_rank, node.num_workers()) +
           " LOCAL_RANK=" + Range(0, node.num_workers()) + "\n";
    out += "  env:\n";
    for (const auto& [k, v] : WorkerEnv(plan, static_cast<int>(i), 0, gen, opts.inherited)) {
      if (k == "RANK" || k == "LOCAL_RANK" || k == "ROLE_RANK") continue;
      std::string shown = v;
      if (IsSecretName(k) && !StartsWith(v, "(")) shown = "****";
      else if (k == "MASTER_PORT" && v == "0") shown = kAtLaunch;
      else if (k == "OMP_NUM_THREADS" && !UserSetEnv(plan.job, node, opts.inherited, k))
        shown = "(cores on the node / " + std::to_string(node.num_workers()) + ", at least 1)";
      else if (k == "DSLAUNCH_TRAINER_CONFIG") shown = "(the trainer: section of " + job.path + ")";
      out += "    " + k + "=" + shown + "\n";
    }
    out += "  command: " + CommandLine(job) + "\n";
  }
  return out + Standbys(plan);
}

}  // namespace ds
