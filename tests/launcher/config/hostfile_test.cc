#include "launcher/config/hostfile.h"
#include "launcher/config/env_files.h"
#include "launcher/config/job_spec.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <unistd.h>

namespace ds {
namespace {

std::string ErrorOf(const std::string& text) {
  auto r = ParseHostfile(text, "hostfile");
  REQUIRE_FALSE(r.ok());
  return r.status().message();
}

TEST_CASE("hostfile: hosts, slots, comments, blank lines") {
  auto r = ParseHostfile("# cluster\n\nw0 slots=4\n  w1\tslots=2   # trailing\n\r\n", "hostfile");
  REQUIRE(r.ok());
  REQUIRE(r->hosts.size() == 2);
  CHECK(r->path == "hostfile");
  CHECK(r->hosts[0].name == "w0");
  CHECK(r->hosts[0].slots == 4);
  CHECK(r->hosts[0].line == 3);
  CHECK(r->hosts[1].name == "w1");
  CHECK(r->hosts[1].slots == 2);
  CHECK(r->hosts[1].line == 4);
  CHECK_FALSE(r->hosts[0].ssh_port);
}

TEST_CASE("hostfile: OpenMPI's max_slots= is ignored with one notice per file") {
  auto r = ParseHostfile("w0 slots=2 max_slots=8\nw1 slots=2\nw2 slots=1 max_slots=4\n", "ompi_hosts");
  REQUIRE(r.ok());
  REQUIRE(r->hosts.size() == 3);
  CHECK(r->hosts[0].slots == 2);
  CHECK(r->hosts[0].env.empty());
  CHECK(r->notices == std::vector<std::string>{
                          "ompi_hosts:1: ignoring max_slots=8 (OpenMPI's limit; dslaunch runs one worker per "
                          "selected slot), here and on later lines"});
  auto plain = ParseHostfile("w0 slots=2\n", "hf");
  REQUIRE(plain.ok());
  CHECK(plain->notices.empty());
  CHECK(ErrorOf("w0 slots=2 max_slot=3\n").starts_with(
      "hostfile:1: unknown key 'max_slot' (did you mean 'max_slots'?)"));
}

TEST_CASE("hostfile: per-host keys") {
  auto r = ParseHostfile("w0 slots=1 ssh_port=2222 user=ubuntu NCCL_SOCKET_IFNAME=ens1 GLOO_SOCKET_IFNAME=ens2\n",
                         "hf");
  REQUIRE(r.ok());
  const HostEntry& h = r->hosts[0];
  REQUIRE(h.ssh_port);
  CHECK(*h.ssh_port == 2222);
  CHECK(h.user == "ubuntu");
  CHECK(h.env.at("NCCL_SOCKET_IFNAME") == "ens1");
  CHECK(h.env.at("GLOO_SOCKET_IFNAME") == "ens2");
}

TEST_CASE("hostfile: CRLF line endings") {
  auto r = ParseHostfile("w0 slots=2\r\nw1 slots=3\r\n", "hf");
  REQUIRE(r.ok());
  CHECK(r->hosts[1].slots == 3);
}

TEST_CASE("hostfile: IPv6 literals in brackets") {
  auto r = ParseHostfile("[fe80::1] slots=2\n[::1]\tslots=1 ssh_port=22\n", "hf");
  REQUIRE(r.ok());
  CHECK(r->hosts[0].name == "fe80::1");
  CHECK(r->hosts[1].name == "::1");
}

TEST_CASE("hostfile: misspelt slots names the line, shows a caret, suggests") {
  CHECK(ErrorOf("w0 slots=4\nw1 slots=4\nw2 slot=4\n") ==
        "hostfile:3: expected 'slots=N', got 'slot=4' (did you mean 'slots'?)\n"
        "w2 slot=4\n"
        "   ^");
}

TEST_CASE("hostfile: missing slots") {
  CHECK(ErrorOf("w0\n") == "hostfile:1: expected 'slots=N' after the host name\nw0\n  ^");
  CHECK(ErrorOf("w0 ssh_port=22\n") == "hostfile:1: expected 'slots=N', got 'ssh_port=22'\nw0 ssh_port=22\n   ^");
}

TEST_CASE("hostfile: slots=0 and trailing garbage") {
  CHECK(ErrorOf("w0 slots=0\n") == "hostfile:1: slots must be between 1 and 1048576, got 0\nw0 slots=0\n         ^");
  CHECK(ErrorOf("w0 slots=4abc\n") ==
        "hostfile:1: expected an integer after 'slots=', got '4abc'\nw0 slots=4abc\n         ^");
  CHECK(ErrorOf("w0 slots=\n") == "hostfile:1: expected an integer after 'slots=', got ''\nw0 slots=\n         ^");
  CHECK(ErrorOf("w0 slots=-2\n") ==
        "hostfile:1: slots must be between 1 and 1048576, got -2\nw0 slots=-2\n         ^");
}

TEST_CASE("hostfile: the caret keeps tabs aligned") {
  CHECK(ErrorOf("\tw0\tslot=1\n") == "hostfile:1: expected 'slots=N', got 'slot=1' (did you mean 'slots'?)\n"
                                     "\tw0\tslot=1\n\t  \t^");
}

TEST_CASE("hostfile: duplicate host names the first line") {
  CHECK(ErrorOf("w0 slots=1\n# x\nw0 slots=2\n") ==
        "hostfile:3: duplicate host 'w0' (first defined on line 1)\nw0 slots=2\n^");
}

TEST_CASE("hostfile: empty file or only comments") {
  CHECK(ErrorOf("") == "hostfile: no hosts; expected lines such as 'worker-0 slots=4'");
  CHECK(ErrorOf("# nothing\n\n   \n") == "hostfile: no hosts; expected lines such as 'worker-0 slots=4'");
}

TEST_CASE("hostfile: bracket syntax errors") {
  CHECK(ErrorOf("[fe80::1 slots=1\n") ==
        "hostfile:1: expected an IPv6 address in brackets such as '[fe80::1]', got '[fe80::1'\n"
        "[fe80::1 slots=1\n^");
  CHECK(ErrorOf("[fe80::1]:22 slots=1\n") ==
        "hostfile:1: expected an IPv6 address in brackets such as '[fe80::1]', got '[fe80::1]:22'\n"
        "[fe80::1]:22 slots=1\n^");
  CHECK(ErrorOf("[] slots=1\n") == "hostfile:1: expected an IPv6 address inside the brackets, got '[]'\n[] slots=1\n^");
  CHECK(ErrorOf("[w0] slots=1\n") ==
        "hostfile:1: expected an IPv6 address inside the brackets, got '[w0]'\n[w0] slots=1\n^");
  CHECK(ErrorOf("fe80::1 slots=1\n") ==
        "hostfile:1: an IPv6 address must be written in brackets, e.g. '[fe80::1]'\nfe80::1 slots=1\n^");
}

TEST_CASE("hostfile: bad host names") {
  CHECK(ErrorOf("bob@w0 slots=1\n") ==
        "hostfile:1: '@' is not allowed in a host name; write the login as 'user=NAME'\nbob@w0 slots=1\n   ^");
  CHECK(ErrorOf("w,0 slots=1\n") == "hostfile:1: unexpected character ',' in host name 'w,0'\nw,0 slots=1\n ^");
  CHECK(ErrorOf("slots=1\n") == "hostfile:1: expected a host name before 'slots=1'\nslots=1\n^");
}

TEST_CASE("hostfile: bad ssh_port") {
  CHECK(ErrorOf("w0 slots=1 ssh_port=22x\n") ==
        "hostfile:1: expected a port number between 1 and 65535 after 'ssh_port=', got '22x'\n"
        "w0 slots=1 ssh_port=22x\n                    ^");
  CHECK(ErrorOf("w0 slots=1 ssh_port=70000\n").starts_with(
        "hostfile:1: expected a port number between 1 and 65535 after 'ssh_port=', got '70000'"));
  CHECK(ErrorOf("w0 slots=1 ssh_port=0\n").starts_with(
        "hostfile:1: expected a port number between 1 and 65535 after 'ssh_port=', got '0'"));
}

TEST_CASE("hostfile: unknown, duplicate and malformed keys") {
  CHECK(ErrorOf("w0 slots=1 ssh-port=22\n") ==
        "hostfile:1: unknown key 'ssh-port' (did you mean 'ssh_port'?); expected ssh_port=, user= or an "
        "environment variable in capitals\nw0 slots=1 ssh-port=22\n           ^");
  CHECK(ErrorOf("w0 slots=1 usr=me\n").starts_with("hostfile:1: unknown key 'usr' (did you mean 'user'?)"));
  CHECK(ErrorOf("w0 slots=1 user=a user=b\n").starts_with("hostfile:1: duplicate key 'user' for host 'w0'"));
  CHECK(ErrorOf("w0 slots=1 slots=2\n").starts_with("hostfile:1: duplicate key 'slots' for host 'w0'"));
  CHECK(ErrorOf("w0 slots=1 gpus\n").starts_with("hostfile:1: expected KEY=VALUE (ssh_port=N, user=NAME"));
  CHECK(ErrorOf("w0 slots=1 user=\n") == "hostfile:1: expected a value after 'user='\nw0 slots=1 user=\n                ^");
  CHECK(ErrorOf("w0 slots=1 RANK=3\n").starts_with(
        "hostfile:1: RANK is set by dslaunch for every worker and cannot be set per host"));
}

TEST_CASE("hostfile: a missing file is an error, never a local fallback") {
  auto r = LoadHostfile("/nonexistent/dslaunch-hostfile");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message() == "hostfile /nonexistent/dslaunch-hostfile: No such file or directory");
  auto d = LoadHostfile("/tmp");
  REQUIRE_FALSE(d.ok());
  CHECK(d.status().message() == "hostfile /tmp: is a directory");
}

TEST_CASE("hostfile: LoadHostfile reads and names the file") {
  std::string path = "/tmp/dslaunch-hostfile-test-" + std::to_string(getpid());
  {
    std::ofstream f(path);
    f << "a slots=2\nb slots=x\n";
  }
  auto r = LoadHostfile(path);
  std::remove(path.c_str());
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().starts_with(path + ":2: expected an integer after 'slots=', got 'x'"));
}

TEST_CASE("hostfile: the committed examples parse") {
  for (const char* name : {"hostfiles/example", "hostfiles/local"}) {
    auto r = LoadHostfile(std::string(DSLAUNCH_SOURCE_DIR) + "/" + name);
    INFO(name << ": " << r.status().message());
    CHECK(r.ok());
  }
  auto local = LoadHostfile(std::string(DSLAUNCH_SOURCE_DIR) + "/hostfiles/local");
  REQUIRE(local.ok());
  CHECK(local->hosts.size() == 3);
}

TEST_CASE("hostfile: LocalHostfile is one host, a slot per GPU else per core") {
  Hostfile cpu = LocalHostfile(8, 0);
  REQUIRE(cpu.hosts.size() == 1);
  CHECK(cpu.hosts[0].slots == 8);
  CHECK(cpu.path.empty());
  CHECK(cpu.hosts[0].line == 0);
  CHECK(LocalHostfile(8, 2).hosts[0].slots == 2);
  CHECK(LocalHostfile(0, 0).hosts[0].slots == 1);
}

TEST_CASE("hostfile: limits checked at parse time") {
  // The slots of all hosts together: the plan holds one slot per rank.
  CHECK(ErrorOf("w0 slots=1048576\nw1 slots=1048576\n") ==
        "hostfile:2: the hosts' slots add up to 2097152 here, more than the maximum world size 1048576\n"
        "w1 slots=1048576\n         ^");
  CHECK(ErrorOf("w0 slots=2000000000\n") ==
        "hostfile:1: slots must be between 1 and 1048576, got 2000000000\nw0 slots=2000000000\n         ^");
  // A NUL byte would end the value at exec; a value over MAX_ARG_STRLEN would fail exec with E2BIG.
  CHECK(ErrorOf(std::string("w0 slots=1 FOO=a\0b\n", 19)) ==
        "hostfile:1: unexpected NUL byte\nw0 slots=1 FOO=a\\x00b\n                ^");  // echoed escaped
  std::string big = "w0 slots=1 FOO=" + std::string(131070, 'x');
  CHECK(ErrorOf(big + "\n") ==
        "hostfile:1: FOO=... is 131075 bytes, over the kernel's limit of 131072 for one environment string "
        "(MAX_ARG_STRLEN)\n" + big + "\n               ^");
}

}  // namespace
}  // namespace ds

namespace ds {
namespace {

// Issue 42 item 8: a hostfile line or a job-file key with terminal escapes
// reached the terminal raw, in the message and in the echoed line (set the
// window title, clear the screen). Every quoted word and echoed line is
// escaped (PrintableText); the caret still points under the column.
TEST_CASE("input errors: terminal escapes in a hostfile line or a job-file key are escaped, message and echo",
          "[hostfile]") {
  auto hf = ParseHostfile("a\x1b]0;PWNED\x07" "b slots=1\n", "hostfile");
  REQUIRE_FALSE(hf.ok());
  const std::string& m = hf.status().message();
  CHECK(m.find('\x1b') == std::string::npos);
  CHECK(m.find('\x07') == std::string::npos);
  CHECK(m == "hostfile:1: unexpected character '\\x1b' in host name 'a\\x1b]0;PWNED\\x07b'\n"
             "a\\x1b]0;PWNED\\x07b slots=1\n"
             " ^");
  auto job = ParseJobFile("command: [true]\nfoo\x1b[2J: 1\n", "train.yaml");
  REQUIRE_FALSE(job.ok());
  CHECK(job.status().message().find('\x1b') == std::string::npos);
  CHECK(job.status().message().find("foo\\x1b[2J") != std::string::npos);
  auto env = ParseDotEnv("A='x' \x1b[2J\n", ".dslaunch_env");
  REQUIRE_FALSE(env.ok());
  CHECK(env.status().message() == ".dslaunch_env:1: unexpected text after the quoted value of A: '\\x1b[2J'");
}

}  // namespace
}  // namespace ds
