// RemoteCommand / SupervisedCommand: the quoting word for word, and the sh
// supervisor run for real on this machine (no ssh needed): the secret
// arrives on the agent's stdin, EOF on the channel's stdin stops the agent.
#include "launcher/spawn/ssh/remote_command.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include <catch2/catch.hpp>

#include "tests/launcher/spawn/ssh/cluster_env.h"
#include "tests/test_util/temp_dir.h"

namespace ds {
namespace {

// Runs `command` with /bin/sh -c, its stdin a pipe we hold. Returns pid and fd.
std::pair<pid_t, int> StartShell(const std::string& command) {
  int p[2];
  REQUIRE(pipe(p) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    setpgid(0, 0);  // as under sshd: the supervisor leads its own group
    dup2(p[0], 0);
    close(p[0]);
    close(p[1]);
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(p[0]);
  return {pid, p[1]};
}

// Waits up to `seconds` for `pid`; returns its wait status or -1.
int WaitFor(pid_t pid, double seconds) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int status = 0;
  while (std::chrono::steady_clock::now() < end) {
    if (waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return -1;
}

}  // namespace

TEST_CASE("RemoteCommand quotes every word and exports env first", "[unit]") {
  CHECK(RemoteCommand({"/opt/ds/dsagent", "--job-id", "j1"}, {}) == "exec /opt/ds/dsagent --job-id j1");
  CHECK(RemoteCommand({"/opt/my dir/dsagent", "a'b", ""}, {{"DSLAUNCH_LOG", "INFO"}, {"X", "a b"}}) ==
        "exec env DSLAUNCH_LOG=INFO 'X=a b' '/opt/my dir/dsagent' 'a'\\''b' ''");
  CHECK(RemoteCommand({"echo", "$HOME", "`id`;rm"}, {}) == "exec echo '$HOME' '`id`;rm'");
}

TEST_CASE("Supervisor: the secret reaches the agent's stdin, not its argv; exit status passes through", "[process]") {
  testing::TempDir tmp("dsl-test-supervisor");
  const std::string& dir = tmp.path();
  std::string cmd = SupervisedCommand(
      {"sh", "-c", "read s; echo \"$s\" > " + dir + "/secret; cat /proc/$$/cmdline > " + dir + "/argv; exit 5"},
      {{"DSLAUNCH_LOG", "WARN"}}, true);
  auto [pid, fd] = StartShell(cmd);
  REQUIRE(write(fd, "hunter2\n", 8) == 8);
  int st = WaitFor(pid, 20);
  close(fd);
  REQUIRE(st != -1);
  CHECK(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 5);
  CHECK(test::ReadFile(dir + "/secret") == "hunter2\n");
  CHECK(test::ReadFile(dir + "/argv").find("hunter2") == std::string::npos);
}

TEST_CASE("Supervisor: with outlive_session the end of the channel ends nothing; the status still passes through",
          "[process]") {
  testing::TempDir tmp("dsl-test-supervisor-outlive");
  const std::string& dir = tmp.path();
  auto [pid, fd] = StartShell(SupervisedCommand(
      {"sh", "-c", "read s; touch " + dir + "/up; while [ ! -e " + dir + "/go ]; do sleep 0.05; done; exit 3"}, {},
      true, /*outlive_session=*/true));
  REQUIRE(write(fd, "s\n", 2) == 2);
  for (int i = 0; i < 500 && !std::filesystem::exists(dir + "/up"); ++i) usleep(10000);
  close(fd);  // the launcher went away
  usleep(300000);
  int st = 0;
  CHECK(::waitpid(pid, &st, WNOHANG) == 0);  // still running
  test::WriteFile(dir + "/go", "");
  st = WaitFor(pid, 20);
  REQUIRE(st != -1);
  CHECK(WEXITSTATUS(st) == 3);
}

TEST_CASE("Supervisor: EOF on stdin TERMs the agent, and KILLs one that ignores TERM", "[process]") {
  testing::TempDir tmp("dsl-test-supervisor-eof");
  const std::string& dir = tmp.path();
  SECTION("an agent that exits on TERM") {
    auto [pid, fd] = StartShell(SupervisedCommand({"sh", "-c", "read s; touch " + dir + "/up; exec sleep 300"}, {}, true));
    REQUIRE(write(fd, "s\n", 2) == 2);
    for (int i = 0; i < 500 && !std::filesystem::exists(dir + "/up"); ++i) usleep(10000);
    close(fd);  // the connection went away
    int st = WaitFor(pid, 10);
    REQUIRE(st != -1);
    CHECK(WEXITSTATUS(st) == 128 + SIGTERM);
  }
  SECTION("an agent that ignores TERM is killed with its group after 5 s") {
    auto [pid, fd] = StartShell(
        SupervisedCommand({"sh", "-c", "trap '' TERM; touch " + dir + "/up; while :; do sleep 0.2; done"}, {}, false));
    for (int i = 0; i < 500 && !std::filesystem::exists(dir + "/up"); ++i) usleep(10000);
    close(fd);
    int st = WaitFor(pid, 20);  // generous upper bound: proves it does not hang
    REQUIRE(st != -1);
    CHECK((WIFSIGNALED(st) || WEXITSTATUS(st) != 0));
  }
}

TEST_CASE("OpenSshArgv: the launch tree's ssh command, as SshSession would connect", "[unit]") {
  SshOptions o;
  o.connect_timeout = 2.5;
  o.host_key_policy = HostKeyPolicy::kYes;
  o.default_port = 2200;
  CHECK(OpenSshArgv(SshTarget{"n3", "", std::nullopt}, o, "exec 'dsagent'") ==
        std::vector<std::string>{"ssh", "-T", "-a", "-x", "-o", "BatchMode=yes", "-o", "ConnectTimeout=3", "-o",
                                 "StrictHostKeyChecking=yes", "-p", "2200", "--", "n3", "exec 'dsagent'"});
  o.config_file = "/etc/dsl ssh";
  const auto argv = OpenSshArgv(SshTarget{"-oProxyCommand=x", "bob", 22}, o, "true");
  // The host's own port wins; a host that looks like an option stays a host (after --).
  CHECK(std::vector<std::string>(argv.begin() + 10, argv.end()) ==
        std::vector<std::string>{"-F", "/etc/dsl ssh", "-p", "22", "-l", "bob", "--", "-oProxyCommand=x", "true"});
}

}  // namespace ds
