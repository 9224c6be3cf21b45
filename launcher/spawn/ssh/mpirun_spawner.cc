#include "launcher/spawn/ssh/mpirun_spawner.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "common/client_conn.h"
#include "common/log.h"
#include "common/strings.h"
#include "launcher/spawn/step_command.h"
#include "launcher/spawn/tool_group.h"

namespace ds {

std::vector<std::string> MpirunArgv(const MpirunOptions& o, const std::vector<AgentSpec>& specs,
                                    const std::vector<std::string>& agent_argv) {
  std::string hosts;
  for (const AgentSpec& s : specs) hosts += (hosts.empty() ? "" : ",") + s.host;
  std::vector<std::string> argv = {o.mpirun_path, "--host", hosts, "-np", std::to_string(specs.size()),
                                   "--map-by", "node", "--bind-to", "none", "--stdin", "all"};
  if (o.as_root) argv.push_back("--allow-run-as-root");
  std::string rsh = "-o BatchMode=yes";
  if (!o.ssh.config_file.empty()) rsh += " -F " + ShellQuote(o.ssh.config_file);
  if (o.ssh.default_port) rsh += " -p " + std::to_string(*o.ssh.default_port);
  argv.insert(argv.end(), {"--mca", "plm_rsh_args", rsh});
  for (const auto& [k, v] : ForwardedEnv(o.ssh)) argv.insert(argv.end(), {"-x", k + "=" + v});
  argv.insert(argv.end(), o.extra_args.begin(), o.extra_args.end());
  argv.insert(argv.end(), agent_argv.begin(), agent_argv.end());
  return argv;
}

MpirunSpawner::~MpirunSpawner() {
  std::error_code ec;
  for (const std::string& d : token_dirs_) std::filesystem::remove_all(d, ec);
}

Result<ToolGroupSpec> MpirunSpawner::Prepare(const std::vector<AgentSpec>& specs) {
  auto mpirun = FindExecutable(options_.mpirun_path);
  if (!mpirun.ok())
    return Status::NotFound(fmt::format(
        "--launcher openmpi: mpirun not found ({}); apt-get install openmpi-bin, or use --launcher ssh",
        mpirun.status().message()));
  for (const AgentSpec& s : specs) {
    if (s.stdin_payload != specs[0].stdin_payload)
      return Status::InvalidArgument("the agents of one mpirun must share their stdin payload");
    if (s.ssh_port != specs[0].ssh_port)
      return Status::InvalidArgument(
          "--launcher openmpi: hosts with different ssh_port= cannot share one mpirun; set Port in the ssh config "
          "file (DSLAUNCH_SSH_CONFIG) instead");
    if (!s.user.empty())
      return Status::InvalidArgument(
          "--launcher openmpi: a hostfile user= cannot be passed to mpirun's ssh; set User in the ssh config file "
          "(DSLAUNCH_SSH_CONFIG) instead");
  }
  DS_ASSIGN_OR_RETURN(std::vector<std::string> agent, StepAgentArgv(specs, "OMPI_COMM_WORLD_RANK"));
  std::string dir = (std::filesystem::temp_directory_path() / "dslaunch-mpirun.XXXXXX").string();
  if (::mkdtemp(dir.data()) == nullptr) return Status::IOError("mkdtemp " + dir + ": " + std::strerror(errno));
  token_dirs_.push_back(dir);
  const std::string token_file = dir + "/token";
  {
    UniqueFd fd(::open(token_file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    const std::string line = specs[0].stdin_payload + "\n";
    if (fd.get() < 0 || ::write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size()))
      return Status::IOError("writing " + token_file + ": " + std::strerror(errno));
  }
  agent.insert(agent.end(), {"--secret-file", token_file});
  MpirunOptions o = options_;
  o.mpirun_path = *mpirun;
  if (specs[0].ssh_port) o.ssh.default_port = specs[0].ssh_port;
  ToolGroupSpec tool{.tool = "mpirun", .path = *mpirun, .argv = MpirunArgv(o, specs, agent), .env = {},
                     .stdin_data = specs[0].stdin_payload + "\n", .hosts = {}, .grace = options_.ssh.stop_grace,
                     .host_ended = nullptr, .benign = nullptr, .stop_host = nullptr};
  for (const AgentSpec& s : specs) tool.hosts.push_back(s.host);
  DS_LOG(Info, Agent) << "mpirun: one run for " << specs.size() << " agents";
  return tool;
}

std::vector<Result<std::unique_ptr<AgentHandle>>> MpirunSpawner::Start(const std::vector<AgentSpec>& specs) {
  if (specs.empty()) return {};
  return StartForSpecs(specs, Prepare(specs));
}

}  // namespace ds
