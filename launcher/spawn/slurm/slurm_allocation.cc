#include "launcher/spawn/slurm/slurm_allocation.h"

#include <map>

#include <fmt/format.h>

#include "common/strings.h"

namespace ds {
namespace {

int Positive(const std::string& s) {
  auto n = ParseInt(std::string(Trim(s)));
  return n && *n > 0 && *n <= kMaxSlotsPerHost ? static_cast<int>(*n) : 0;
}

// `scontrol show node -o LIST`, a line per node:
// "NodeName=w1 Arch=... NodeAddr=10.0.0.1 NodeHostName=w1 ..." -> {w1: 10.0.0.1}
std::map<std::string, std::string> NodeAddrs(const std::string& out) {
  std::map<std::string, std::string> addrs;
  for (const std::string& line : Split(out, '\n')) {
    std::string name, addr;
    for (const std::string& field : Split(line, ' ')) {
      if (StartsWith(field, "NodeName=")) name = field.substr(9);
      else if (StartsWith(field, "NodeAddr=")) addr = field.substr(9);
    }
    if (!name.empty() && !addr.empty()) addrs[name] = addr;
  }
  return addrs;
}

}  // namespace

SlurmEnv SlurmEnvFrom(const std::vector<std::pair<std::string, std::string>>& env) {
  SlurmEnv s;
  const std::pair<const char*, std::string*> fields[] = {
      {"SLURM_JOB_ID", &s.job_id}, {"SLURM_JOB_NODELIST", &s.nodelist}, {"SLURM_NTASKS_PER_NODE", &s.ntasks_per_node},
      {"SLURM_TASKS_PER_NODE", &s.tasks_per_node}, {"SLURM_GPUS_ON_NODE", &s.gpus_on_node}};
  for (const auto& [k, v] : env)
    for (const auto& [name, field] : fields)
      if (k == name) *field = v;
  return s;
}

Result<std::vector<int>> ExpandSlurmCounts(const std::string& text, const std::string& what) {
  std::vector<int> out;
  auto bad = [&] {
    return Status::InvalidArgument(fmt::format("{}='{}': expected counts such as 2(x3),1", what, text));
  };
  for (const std::string& item : Split(text, ',')) {
    const size_t paren = item.find("(x");
    const int count = Positive(item.substr(0, paren));
    int repeat = 1;
    if (paren != std::string::npos) {
      if (item.back() != ')') return bad();
      repeat = Positive(item.substr(paren + 2, item.size() - paren - 3));
    }
    if (count == 0 || repeat == 0 || out.size() + repeat > static_cast<size_t>(kMaxWorldSize)) return bad();
    out.insert(out.end(), repeat, count);
  }
  if (out.empty()) return bad();
  return out;
}

Result<Hostfile> SlurmHostfile(const SlurmEnv& env, const CommandOutput& run) {
  if (env.nodelist.empty())
    return Status::InvalidArgument(fmt::format(
        "--launcher slurm: SLURM_JOB_NODELIST is not set{}; run dslaunch inside an allocation (sbatch or salloc)",
        env.job_id.empty() ? " (and no SLURM_JOB_ID: not inside a Slurm job)" : ""));
  DS_ASSIGN_OR_RETURN(std::string names_out, run({"scontrol", "show", "hostnames", env.nodelist}));
  std::vector<std::string> names;
  for (const std::string& line : Split(names_out, '\n'))
    if (!Trim(line).empty()) names.emplace_back(Trim(line));
  if (names.empty())
    return Status::InvalidArgument(fmt::format("scontrol show hostnames '{}' listed no nodes", env.nodelist));

  std::vector<int> slots(names.size(), 1);
  if (!env.ntasks_per_node.empty()) {
    const int n = Positive(env.ntasks_per_node);
    if (n == 0)
      return Status::InvalidArgument(
          fmt::format("SLURM_NTASKS_PER_NODE='{}': expected a positive integer", env.ntasks_per_node));
    slots.assign(names.size(), n);
  } else if (Positive(env.gpus_on_node) > 0) {
    slots.assign(names.size(), Positive(env.gpus_on_node));
  } else if (!env.tasks_per_node.empty()) {
    DS_ASSIGN_OR_RETURN(slots, ExpandSlurmCounts(env.tasks_per_node, "SLURM_TASKS_PER_NODE"));
    if (slots.size() != names.size())
      return Status::InvalidArgument(fmt::format("SLURM_TASKS_PER_NODE='{}' counts {} nodes, SLURM_JOB_NODELIST {}",
                                                 env.tasks_per_node, slots.size(), names.size()));
  }

  DS_ASSIGN_OR_RETURN(std::string nodes_out, run({"scontrol", "show", "node", "-o", env.nodelist}));
  const std::map<std::string, std::string> addrs = NodeAddrs(nodes_out);
  Hostfile hf;
  hf.path = kSlurmNodelist;
  for (size_t i = 0; i < names.size(); ++i) {
    HostEntry h;
    h.name = names[i];
    h.slots = slots[i];
    h.line = static_cast<int>(i) + 1;
    if (auto it = addrs.find(h.name); it != addrs.end() && it->second != h.name) h.addr = it->second;
    hf.hosts.push_back(std::move(h));
  }
  return hf;
}

}  // namespace ds
