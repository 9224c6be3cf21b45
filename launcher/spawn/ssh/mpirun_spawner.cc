#include "launcher/spawn/ssh/mpirun_spawner.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "common/log.h"
#include "common/process_dirs.h"
#include "common/strings.h"
#include "common/unique_fd.h"
#include "launcher/spawn/step_command.h"

namespace ds {
namespace {

const char* Name(MpiFlavor f) { return f == MpiFlavor::kMpich ? "mpich" : "openmpi"; }

// ssh's options for our config file and port ("" when neither is set).
std::string SshArgs(const SshOptions& ssh) {
  std::string a = "-o BatchMode=yes";
  if (!ssh.config_file.empty()) a += " -F " + ShellQuote(ssh.config_file);
  if (ssh.default_port) a += " -p " + std::to_string(*ssh.default_port);
  return a;
}

Status WritePrivateFile(const std::string& path, const std::string& text, mode_t mode) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
  if (fd.get() < 0 || ::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    return Status::IOError("writing " + path + ": " + std::strerror(errno));
  return Status::OK();
}

}  // namespace

std::vector<std::string> MpirunArgv(const MpirunOptions& o, const std::vector<AgentSpec>& specs,
                                    const std::vector<std::string>& agent_argv, const std::string& ssh_wrapper) {
  std::string hosts;
  for (const AgentSpec& s : specs) hosts += (hosts.empty() ? "" : ",") + s.host;
  const std::string n = std::to_string(specs.size());
  std::vector<std::string> argv;
  if (o.flavor == MpiFlavor::kMpich) {
    // -disable-auto-cleanup: one agent's exit must not SIGKILL the others
    // before they stop their own workers (each does, once it loses the
    // coordinator); the coordinator decides, not the launcher.
    argv = {o.mpirun_path, "-hosts", hosts, "-n", n, "-ppn", "1", "-launcher", "ssh", "-disable-auto-cleanup"};
    if (!ssh_wrapper.empty()) argv.insert(argv.end(), {"-launcher-exec", ssh_wrapper});
  } else {
    argv = {o.mpirun_path, "--host", hosts, "-np", n, "--map-by", "node", "--bind-to", "none", "--stdin", "all"};
    if (o.as_root) argv.push_back("--allow-run-as-root");
    argv.insert(argv.end(), {"--mca", "plm_rsh_args", SshArgs(o.ssh)});
    argv.insert(argv.end(), {"--mca", "orte_abort_on_non_zero_status", "0"});  // as -disable-auto-cleanup
    for (const auto& [k, v] : ForwardedEnv(o.ssh)) argv.insert(argv.end(), {"-x", k + "=" + v});
  }
  argv.insert(argv.end(), o.extra_args.begin(), o.extra_args.end());
  argv.insert(argv.end(), agent_argv.begin(), agent_argv.end());
  return argv;
}

MpirunSpawner::~MpirunSpawner() {
  std::error_code ec;
  for (const std::string& d : private_dirs_) std::filesystem::remove_all(d, ec);
}

Result<ToolGroupSpec> MpirunSpawner::Prepare(const std::vector<AgentSpec>& specs) {
  const bool mpich = options_.flavor == MpiFlavor::kMpich;
  const std::vector<std::string> names =
      !options_.mpirun_path.empty() ? std::vector<std::string>{options_.mpirun_path}
      : mpich                       ? std::vector<std::string>{"mpiexec.hydra", "mpiexec.mpich", "mpiexec"}
                                    : std::vector<std::string>{"mpirun.openmpi", "mpirun"};
  Result<std::string> exe = Status::NotFound("");
  for (const std::string& name : names)
    if ((exe = FindExecutable(name)).ok()) break;
  if (!exe.ok())
    return Status::NotFound(fmt::format("--launcher {}: {} not found ({}); apt-get install {}, or use --launcher ssh",
                                        Name(options_.flavor), names.back(), exe.status().message(),
                                        mpich ? "mpich" : "openmpi-bin"));
  for (const AgentSpec& s : specs) {
    if (s.stdin_payload != specs[0].stdin_payload)
      return Status::InvalidArgument("the agents of one mpirun must share their stdin payload");
    if (s.ssh_port != specs[0].ssh_port)
      return Status::InvalidArgument(fmt::format(
          "--launcher {}: hosts with different ssh_port= cannot share one run; set Port in the ssh config file "
          "(DSLAUNCH_SSH_CONFIG) instead", Name(options_.flavor)));
    if (!s.user.empty())
      return Status::InvalidArgument(fmt::format(
          "--launcher {}: a hostfile user= cannot be passed to the MPI launcher's ssh; set User in the ssh config "
          "file (DSLAUNCH_SSH_CONFIG) instead", Name(options_.flavor)));
  }
  DS_ASSIGN_OR_RETURN(std::vector<std::string> agent,
                      StepAgentArgv(specs, mpich ? "PMI_RANK" : "OMPI_COMM_WORLD_RANK"));
  MpirunOptions o = options_;
  o.mpirun_path = *exe;
  if (specs[0].ssh_port) o.ssh.default_port = specs[0].ssh_port;
  // Removed by the destructor; a SIGKILLed dslaunch's by the next MPI launch.
  std::error_code ec;
  const std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
  if (ec) return Status::IOError("no temporary directory for mpirun's files (TMPDIR): " + ec.message());
  DS_ASSIGN_OR_RETURN(std::string dir, MakeProcessDir(tmp.string(), "dslaunch-mpirun."));
  private_dirs_.push_back(dir);
  std::string wrapper;
  if (mpich) {
    agent.insert(agent.end(), {"--secret-via-pmi", "1"});
    if (!o.ssh.config_file.empty() || o.ssh.default_port) {
      wrapper = dir + "/ssh";
      DS_RETURN_IF_ERROR(WritePrivateFile(wrapper, "#!/bin/sh\nexec ssh " + SshArgs(o.ssh) + " \"$@\"\n", 0700));
    }
  } else {
    DS_RETURN_IF_ERROR(WritePrivateFile(dir + "/token", specs[0].stdin_payload + "\n", 0600));
    agent.insert(agent.end(), {"--secret-file", dir + "/token"});
  }
  ToolGroupSpec tool{.tool = Name(options_.flavor), .path = *exe, .argv = MpirunArgv(o, specs, agent, wrapper),
                     .env = {}, .stdin_data = specs[0].stdin_payload + "\n", .hosts = {},
                     .grace = options_.ssh.stop_grace, .host_ended = nullptr, .benign = nullptr, .stop_host = nullptr};
  for (const AgentSpec& s : specs) tool.hosts.push_back(s.host);
  DS_LOG(Info, Agent) << *exe << ": one run for " << specs.size() << " agents";
  return tool;
}

std::vector<Result<std::unique_ptr<AgentHandle>>> MpirunSpawner::Start(const std::vector<AgentSpec>& specs) {
  if (specs.empty()) return {};
  return StartForSpecs(specs, Prepare(specs));
}

}  // namespace ds
