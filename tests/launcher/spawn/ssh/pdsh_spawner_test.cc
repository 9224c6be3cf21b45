// PdshSpawner. [unit] cases need nothing; [cluster] cases run the real pdsh
// against the netns cluster (tests/cluster/with-cluster).
#include "launcher/spawn/ssh/pdsh_spawner.h"

#include <poll.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <thread>

#include <catch2/catch.hpp>

#include "common/strings.h"
#include "launcher/spawn/exit_signal.h"
#include "launcher/spawn/ssh/remote_command.h"
#include "tests/launcher/spawn/ssh/cluster_env.h"
#include "tests/test_util/temp_dir.h"

namespace ds {
namespace {

using test::LoadTestCluster;
using test::ReadFile;
using test::TestCluster;
using test::WaitUntil;

int ProcsInNamespaceBesides(const std::string& ns, const std::string& sshd_pid) {
  int n = 0;
  FILE* p = popen(("ip netns pids " + ns).c_str(), "r");
  char buf[64];
  while (p && fgets(buf, sizeof(buf), p))
    if (std::string(Trim(buf)) != sshd_pid) ++n;
  if (p) pclose(p);
  return n;
}

PdshOptions ClusterPdsh(const TestCluster& c) {
  PdshOptions o;
  o.ssh.config_file = c.ssh_config();
  o.ssh.connect_timeout = 5;
  o.ssh.host_key_policy = HostKeyPolicy::kYes;
  return o;
}

}  // namespace

TEST_CASE("FindPdsh: a missing pdsh is a clear error", "[unit]") {
  auto r = FindPdsh("no-such-pdsh-binary");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message() ==
        "--launcher pdsh: pdsh is not installed (no 'no-such-pdsh-binary' on PATH; apt-get install pdsh), or use "
        "--launcher ssh, which needs no pdsh");
  CHECK_FALSE(FindPdsh("/nonexistent/pdsh").ok());
}

TEST_CASE("PdshSpawner without pdsh fails every host, naming it", "[unit]") {
  PdshOptions o;
  o.pdsh_path = "no-such-pdsh-binary";
  std::vector<AgentSpec> specs(2);
  specs[0].host = "w0";
  specs[0].argv = {"true"};
  specs[1].host = "w1";
  specs[1].argv = {"true"};
  auto r = PdshSpawner(o).Start(specs);
  REQUIRE(r.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    REQUIRE_FALSE(r[i].ok());
    CHECK(StartsWith(r[i].status().message(), "w" + std::to_string(i) + ": --launcher pdsh: pdsh is not installed"));
  }
}

TEST_CASE("PdshSshArgs and PdshRemoteCommand", "[unit]") {
  SshOptions s;
  s.connect_timeout = 2.5;
  s.config_file = "/tmp/my cfg";
  CHECK(PdshSshArgs(s, 2222) ==
        "-o SendEnv=LC_DSLAUNCH_PAYLOAD -a -x -o BatchMode=yes -o ConnectTimeout=3 -o StrictHostKeyChecking=accept-new "
        "-F '/tmp/my cfg' -p 2222 -l%u %h");
  std::vector<AgentSpec> specs(2);
  specs[0].host = "a";
  specs[0].argv = {"/x/dsagent", "--node-index", "0"};
  specs[1].host = "b";
  specs[1].argv = {"/x/dsagent", "--node-index", "1"};
  std::string cmd = PdshRemoteCommand(specs, {});
  CHECK(StartsWith(cmd, "exec sh -c 'case %h in a) set -- /x/dsagent --node-index 0;; b) set -- /x/dsagent "
                        "--node-index 1;; *) echo \"dslaunch: no agent command for host %h\" >&2; exit 2;; esac; "));
  CHECK(cmd.find("LC_DSLAUNCH_PAYLOAD") == std::string::npos);  // no payload: stdin is /dev/null
  specs[0].stdin_payload = specs[1].stdin_payload = "s3cr3t\n";
  cmd = PdshRemoteCommand(specs, {});
  CHECK(cmd.find("s3cr3t") == std::string::npos);  // never on the command line
  CHECK(cmd.find("unset LC_DSLAUNCH_PAYLOAD") != std::string::npos);
}

TEST_CASE("PdshSpawner: each host's exit_fd becomes readable when that host's agent ends", "[process]") {
  // The real pdsh, with a stand-in `ssh` first on PATH that runs the remote
  // command here: pdsh's own processes and output, no sshd needed. pdsh
  // starts its ssh clients with SIGCHLD blocked, which a real sshd never
  // passes on; the stand-in unblocks everything first (perl-base is
  // essential in Debian) or the supervisor's `wait` would never return.
  testing::TempDir tmp("dsl-test-pdshfd");
  const std::string& dir = tmp.path();
  std::filesystem::create_directories(dir + "/bin");
  test::WriteFile(dir + "/bin/ssh",
                  "#!/usr/bin/perl\nuse POSIX;\nsigprocmask(SIG_SETMASK, POSIX::SigSet->new);\n"
                  "exec '/bin/sh', '-c', $ARGV[-1];\n");
  ::chmod((dir + "/bin/ssh").c_str(), 0755);
  std::string old_path = GetAnyEnv("PATH").value_or("/usr/bin:/bin");
  ::setenv("PATH", (dir + "/bin:" + old_path).c_str(), 1);
  auto pdsh = FindPdsh("pdsh");
  if (!pdsh.ok()) {
    ::setenv("PATH", old_path.c_str(), 1);
    DS_SKIP("pdsh is not installed (scripts/install-deps installs it)");
  }
  std::vector<AgentSpec> specs(2);
  specs[0].host = "fdnode0";
  specs[0].argv = {"sh", "-c", "read s; exit 0"};  // ends at once
  specs[1].host = "fdnode1";
  specs[1].argv = {"sh", "-c", "read s; while [ ! -e " + dir + "/go ]; do sleep 0.01; done; exit 6"};
  specs[0].stdin_payload = specs[1].stdin_payload = "s3cret\n";
  PdshOptions o;
  o.pdsh_path = *pdsh;
  auto r = PdshSpawner(o).Start(specs);
  REQUIRE(r.size() == 2);
  REQUIRE(r[0].ok());
  REQUIRE(r[1].ok());
  // pdsh reports an exit 0 only when its whole run ends (pdsh_spawner.h).
  CHECK_FALSE(WaitReadable((*r[0])->exit_fd(), 0.3));
  CHECK_FALSE(WaitReadable((*r[1])->exit_fd(), 0));
  test::WriteFile(dir + "/go", "");
  CHECK(WaitReadable((*r[1])->exit_fd(), 20));
  CHECK(WaitReadable((*r[0])->exit_fd(), 20));
  CHECK_FALSE((*r[1])->Running());
  CHECK((*r[1])->ExitStatus() == 6);
  CHECK_FALSE((*r[0])->Running());
  CHECK((*r[0])->ExitStatus() == 0);
  ::setenv("PATH", old_path.c_str(), 1);
}

TEST_CASE("PdshSpawner: --launcher_args go after pdsh's own options, before the remote command", "[process]") {
  // A stand-in pdsh that writes its argv, one word a line, and exits 0.
  testing::TempDir tmp("dsl-test-pdshargs");
  const std::string& dir = tmp.path();
  test::WriteFile(dir + "/pdsh", "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > " + dir +
                                     "/argv.tmp && mv " + dir + "/argv.tmp " + dir + "/argv\n");
  ::chmod((dir + "/pdsh").c_str(), 0755);
  std::vector<AgentSpec> specs(1);
  specs[0].host = "argnode0";
  specs[0].argv = {"/x/dsagent"};
  PdshOptions o;
  o.pdsh_path = dir + "/pdsh";
  o.ssh.fanout = 4;
  o.extra_args = {"-R", "ssh", "-l", "it's me"};
  auto r = PdshSpawner(o).Start(specs);
  REQUIRE(r.size() == 1);
  REQUIRE(r[0].ok());
  REQUIRE(WaitReadable((*r[0])->exit_fd(), 20));  // the stand-in has ended
  auto words = Split(ReadFile(dir + "/argv"), '\n');
  REQUIRE(words.size() >= 12);
  CHECK(std::vector<std::string>(words.begin(), words.begin() + 3) == std::vector<std::string>{"-S", "-f", "4"});
  CHECK(std::vector<std::string>(words.begin() + 5, words.begin() + 11) ==
        std::vector<std::string>{"-w", "argnode0", "-R", "ssh", "-l", "it's me"});
  CHECK(words[11].find("case %h in") != std::string::npos);  // the remote command comes last
}

TEST_CASE("PdshSpawner runs each host's own command with the secret, exit codes per host", "[cluster]") {
  TestCluster c = LoadTestCluster();
  if (c.nodes.empty()) DS_SKIP(test::kNoCluster);
  std::string dir = "/tmp/dsl-test-pdsh-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  std::vector<AgentSpec> specs;
  for (size_t i = 0; i < c.nodes.size(); ++i) {
    AgentSpec s;
    s.host = c.nodes[i].alias;
    s.node_index = static_cast<int>(i);
    s.argv = {"sh", "-c",
              "read s; echo \"$s ${LC_DSLAUNCH_PAYLOAD:-unset} $(hostname -I | cut -d' ' -f1)\" > " + dir + "/out-" +
                  std::to_string(i) + "; exit " + std::to_string(i == 1 ? 7 : 0)};
    s.stdin_payload = "topsecret\n";
    specs.push_back(s);
  }
  auto r = PdshSpawner(ClusterPdsh(c)).Start(specs);
  REQUIRE(r.size() == specs.size());
  for (size_t i = 0; i < r.size(); ++i) {
    INFO(c.nodes[i].alias);
    REQUIRE(r[i].ok());
    CHECK(WaitUntil([&] { return !(*r[i])->Running(); }, 30));
    CHECK((*r[i])->ExitStatus() == (i == 1 ? 7 : 0));
    CHECK(ReadFile(dir + "/out-" + std::to_string(i)) == "topsecret unset " + c.nodes[i].addr + "\n");
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("PdshSpawner: terminating one host, then all, leaves nothing on the nodes", "[cluster]") {
  TestCluster c = LoadTestCluster();
  if (c.nodes.empty()) DS_SKIP(test::kNoCluster);
  std::string dir = "/tmp/dsl-test-pdshterm-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  std::vector<AgentSpec> specs;
  for (size_t i = 0; i < c.nodes.size(); ++i) {
    AgentSpec s;
    s.host = c.nodes[i].alias;
    s.argv = {"sh", "-c", "trap 'kill $!; exit 143' TERM; sleep 300 & touch " + dir + "/ready-" + std::to_string(i) +
                              "; wait"};
    specs.push_back(s);
  }
  auto r = PdshSpawner(ClusterPdsh(c)).Start(specs);
  for (size_t i = 0; i < r.size(); ++i) {
    REQUIRE(r[i].ok());
    CHECK(WaitUntil([&] { return std::filesystem::exists(dir + "/ready-" + std::to_string(i)); }, 30));
  }
  // One host alone first: the others keep running.
  (*r[0])->Terminate();
  CHECK_FALSE((*r[0])->Running());
  std::string sshd0(Trim(ReadFile(c.dir + "/pids/sshd-0.pid")));
  CHECK(WaitUntil([&] { return ProcsInNamespaceBesides(c.nodes[0].netns, sshd0) == 0; }, 15));
  for (size_t i = 1; i < r.size(); ++i) CHECK((*r[i])->Running());
  for (auto& h : r) (*h)->Terminate();
  for (size_t i = 0; i < r.size(); ++i) {
    CHECK_FALSE((*r[i])->Running());
    std::string sshd(Trim(ReadFile(c.dir + "/pids/sshd-" + std::to_string(i) + ".pid")));
    CHECK(WaitUntil([&] { return ProcsInNamespaceBesides(c.nodes[i].netns, sshd) == 0; }, 15));
  }
  std::filesystem::remove_all(dir);
}

}  // namespace ds
