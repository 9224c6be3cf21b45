// dslaunch cluster status and run: dslaunch executed in the controller
// container with `docker exec`, so SSH, the coordinator and the collectives
// all stay on the overlay network.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "common/subprocess.h"
#include "launcher/cluster/cluster.h"
#include "launcher/cluster/cluster_state.h"
#include "launcher/cluster/compose_files.h"
#include "launcher/cluster/docker_cli.h"

namespace fs = std::filesystem;

namespace ds {
namespace {

struct Controller {
  ClusterState state;
  std::string container;
};

Result<Controller> FindController(const std::string& name, CommandRunner& runner) {
  DS_RETURN_IF_ERROR(CheckClusterName(name));
  DS_ASSIGN_OR_RETURN(const ClusterPaths paths, ClusterPathsOf(name));
  if (!fs::exists(paths.state)) {
    return Status::NotFound("no cluster " + name + " (" + paths.state + " is missing): dslaunch cluster up --name " + name);
  }
  DS_ASSIGN_OR_RETURN(ClusterState s, LoadClusterState(paths.state));
  if (s.joined) {
    return Status::InvalidArgument("cluster " + name + " only has nodes on this host (up --join): run status and "
                                   "jobs on the manager, where its controller is");
  }
  const std::string controller = ControllerName(name);
  DS_ASSIGN_OR_RETURN(CommandResult running, runner.Capture({"docker", "inspect", "--format", "{{.State.Running}}",
                                                             controller}));
  if (running.exit_code != 0 || running.out.rfind("true", 0) != 0) {
    return Status::Unavailable("the controller " + controller + " of cluster " + name +
                               " is not running: dslaunch cluster up --name " + name);
  }
  return Controller{s, controller};
}

// The write end of the docker exec client's stdin. A signal writes its
// number there and closes it, which stops the job as that signal would
// (DSLAUNCH_STDIN_LIFELINE). Async-signal-safe.
volatile sig_atomic_t g_lifeline_fd = -1;

void CloseLifeline(int sig) {
  int fd = g_lifeline_fd;
  g_lifeline_fd = -1;
  if (fd < 0) return;
  unsigned char byte = static_cast<unsigned char>(sig);
  if (sig > 0) (void)!::write(fd, &byte, 1);
  ::close(fd);
}

}  // namespace

Result<int> ClusterStatus(const std::string& name, CommandRunner& runner, std::ostream& out) {
  DS_ASSIGN_OR_RETURN(Controller c, FindController(name, runner));
  DS_ASSIGN_OR_RETURN(std::string table, CaptureOk(runner, {"docker", "ps", "-a", "--filter",
                                                            "label=org.dslaunch.cluster=" + name, "--format",
                                                            "  {{.Names}}\t{{.Status}}"}));
  out << "cluster " << name << ": " << c.state.nodes << " nodes on overlay " << c.state.network << "; containers:\n"
      << table << "dslaunch check in " << c.container << ":\n";
  out.flush();
  return runner.Passthrough({"docker", "exec", c.container, "dslaunch", "check"});
}

Result<int> ClusterRun(const std::string& name, const std::vector<std::string>& args) {
  std::unique_ptr<CommandRunner> runner = MakeProcessRunner();
  DS_ASSIGN_OR_RETURN(Controller c, FindController(name, *runner));
  std::error_code ec;
  const std::string cwd = fs::current_path(ec).string();
  const std::string& ws = c.state.workspace;
  if (cwd != ws && cwd.rfind(ws + "/", 0) != 0) {
    return Status::InvalidArgument("the current folder " + cwd + " is outside cluster " + name + "'s workspace " + ws +
                                   ", the only host folder its containers see: cd into it, or "
                                   "dslaunch cluster up --name " + name + " --workspace DIR");
  }
  std::vector<std::string> argv = {"docker", "exec", "-i", "-w", cwd, "-e", "DSLAUNCH_STDIN_LIFELINE=1"};
  if (::isatty(STDOUT_FILENO)) {
    argv.push_back("-e");
    argv.push_back("DSLAUNCH_COLOR=always");
  }
  argv.push_back(c.container);
  argv.push_back("dslaunch");
  argv.insert(argv.end(), args.begin(), args.end());

  int lifeline[2];
  if (::pipe2(lifeline, O_CLOEXEC) != 0) return Status::IOError(std::string("pipe: ") + std::strerror(errno));
  CStringArray cargv(argv);
  pid_t pid = ForkWithSignalsBlocked();
  if (pid < 0) {
    std::string why = std::strerror(errno);
    ::close(lifeline[0]);
    ::close(lifeline[1]);
    return Status::IOError("fork: " + why);
  }
  if (pid == 0) {
    ResetSignalsInChild();
    ::setpgid(0, 0);  // Ctrl-C reaches us, not the client: we stop the job through its stdin
    ::dup2(lifeline[0], STDIN_FILENO);
    CloseOnExecAboveStderr();
    ::execvp(cargv.data()[0], cargv.data());
    std::fprintf(stderr, "dslaunch: cannot run docker: %s\n", std::strerror(errno));
    ::_exit(127);
  }
  ::close(lifeline[0]);
  // If we are killed outright, the kernel closes this end, with the same effect.
  g_lifeline_fd = lifeline[1];
  struct sigaction sa {};
  sa.sa_handler = CloseLifeline;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Status::IOError(std::string("waitpid: ") + std::strerror(errno));
  }
  CloseLifeline(0);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace ds
