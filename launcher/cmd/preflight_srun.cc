#include "launcher/cmd/preflight_srun.h"

#include <sstream>

#include "common/strings.h"

namespace ds {

std::vector<std::string> SrunProbeArgv(const std::string& srun, const Hostfile& hosts, const std::string& script) {
  std::string nodes;
  for (const HostEntry& h : hosts.hosts) nodes += (nodes.empty() ? "" : ",") + h.name;
  const std::string n = std::to_string(hosts.hosts.size());
  return {srun, "--job-name=dslaunch-check", "--nodes=" + n, "--ntasks=" + n, "--ntasks-per-node=1",
          "--nodelist=" + nodes, "--overlap", "--cpu-bind=none", "--kill-on-bad-exit=0", "--label",
          "/bin/sh", "-c", script};
}

std::string SrunProbeScript(const PreflightOptions& o, const std::string& master_addr) {
  return "echo \"node=$SLURMD_NODENAME\"\nif [ \"$SLURM_NODEID\" = 0 ]; then\n" +
         ProbeScript(o, master_addr, /*is_first=*/true) + "else\n" + ProbeScript(o, master_addr, false) + "fi\n";
}

std::map<std::string, std::string> ProbeOutputsByNode(const std::string& labelled) {
  std::map<std::string, std::string> by_task;  // task label -> its lines
  std::map<std::string, std::string> node_of;  // task label -> node
  std::istringstream in(labelled);
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(": ");
    if (colon == std::string::npos) continue;
    const std::string task(Trim(std::string_view(line).substr(0, colon)));
    const std::string text = line.substr(colon + 2);
    if (StartsWith(text, "node=") && !node_of.count(task)) node_of[task] = text.substr(5);
    else by_task[task] += text + "\n";
  }
  std::map<std::string, std::string> out;
  for (const auto& [task, node] : node_of) out[node] = by_task[task];
  return out;
}

std::vector<PreflightRow> ProbeWithSrun(const Hostfile& hosts, const PreflightOptions& o, const CommandOutput& run) {
  std::vector<PreflightRow> rows;
  if (hosts.hosts.empty()) return rows;
  const HostEntry& first = hosts.hosts[0];
  const std::string master = !o.master_addr.empty() ? o.master_addr : !first.addr.empty() ? first.addr : first.name;
  auto out = run(SrunProbeArgv("srun", hosts, SrunProbeScript(o, master)));
  const auto by_node = out.ok() ? ProbeOutputsByNode(*out) : std::map<std::string, std::string>{};
  for (const HostEntry& h : hosts.hosts) {
    auto it = by_node.find(h.name);
    if (it == by_node.end()) {
      rows.push_back(UnreachableRow(h, out.ok() ? Status::IOError("no answer from srun's task on this node")
                                                : out.status()));
      continue;
    }
    PreflightRow row = EvaluateProbe(h, "", it->second + "time=0\n", 0.0, 0.0, o);
    row.ssh = {true, "srun, no ssh"};
    row.clock = {true, "Slurm's"};
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace ds
