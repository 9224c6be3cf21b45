#include "launcher/spawn/step_command.h"

#include <fmt/format.h>

namespace ds {
namespace {

// argv without the flags that differ per node.
std::vector<std::string> Shared(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  for (size_t i = 0; i < argv.size(); ++i) {
    if ((argv[i] == "--node-index" || argv[i] == "--host") && i + 1 < argv.size()) {
      ++i;
      continue;
    }
    out.push_back(argv[i]);
  }
  return out;
}

}  // namespace

Result<std::vector<std::string>> StepAgentArgv(const std::vector<AgentSpec>& specs, const std::string& identity_var) {
  if (specs.empty()) return Status::InvalidArgument("no agents to start");
  std::vector<std::string> argv = Shared(specs[0].argv);
  std::string nodes;
  for (const AgentSpec& s : specs) {
    if (Shared(s.argv) != argv)
      return Status::InvalidArgument(fmt::format(
          "{}: its agent command line differs from {}'s in more than the node, so one step cannot start both",
          s.host, specs[0].host));
    if (s.host.find_first_of(",=") != std::string::npos)
      return Status::InvalidArgument(fmt::format("{}: a host name with ',' or '=' cannot be listed in a step", s.host));
    nodes += fmt::format("{}{}={}", nodes.empty() ? "" : ",", s.node_index, s.host);
  }
  if (nodes.size() >= kMaxArgBytes)
    return Status::InvalidArgument(fmt::format(
        "{} nodes do not fit in one step's command line ({} bytes, Linux allows {} per argument); start at most "
        "about {} nodes per step",
        specs.size(), nodes.size(), kMaxArgBytes, specs.size() * kMaxArgBytes / nodes.size()));
  argv.insert(argv.end(), {"--step-nodes", nodes, "--step-identity", identity_var});
  return argv;
}

}  // namespace ds
