#include "launcher/cluster/command_runner.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

TEST_CASE("the process runner captures both outputs, feeds stdin and returns the exit code", "[cluster]") {
  auto runner = MakeProcessRunner();
  Result<CommandResult> r = runner->Capture({"sh", "-c", "cat; echo err >&2; exit 3"}, "in put\n");
  REQUIRE(r.ok());
  CHECK(r->out == "in put\n");
  CHECK(r->err == "err\n");
  CHECK(r->exit_code == 3);
}

TEST_CASE("the process runner never deadlocks on large outputs and inputs", "[cluster]") {
  auto runner = MakeProcessRunner();
  const std::string input(1 << 20, 'x');
  // 1 MiB through stdin to stdout, 1 MiB of stderr at the same time.
  Result<CommandResult> r = runner->Capture({"sh", "-c", "head -c 1048576 /dev/zero >&2 & cat; wait"}, input);
  REQUIRE(r.ok());
  CHECK(r->out == input);
  CHECK(r->err.size() == (1u << 20));
}

TEST_CASE("a command that exits without reading its input is not an error of ours", "[cluster]") {
  auto runner = MakeProcessRunner();
  Result<CommandResult> r = runner->Capture({"true"}, std::string(1 << 20, 'x'));
  REQUIRE(r.ok());
  CHECK(r->exit_code == 0);
}

TEST_CASE("CaptureOk names the command, its exit code and its stderr", "[cluster]") {
  auto runner = MakeProcessRunner();
  Result<std::string> r = CaptureOk(*runner, {"sh", "-c", "echo no such network >&2; exit 1"});
  CHECK(r.status().message() == "sh -c 'echo no such network >&2; exit 1' (exit code 1): no such network");
  Result<std::string> missing = CaptureOk(*runner, {"dslaunch-no-such-program"});
  CHECK(missing.status().message() ==
        "dslaunch-no-such-program (exit code 127): cannot run dslaunch-no-such-program: not found in PATH");
  CHECK(CaptureOk(*runner, {"echo", "fine"}).value() == "fine\n");
}

TEST_CASE("CommandLine quotes only what a shell would need quoted", "[cluster]") {
  CHECK(CommandLine({"docker", "network", "create", "--label", "org.dslaunch.cluster=c1", "c1-net"}) ==
        "docker network create --label org.dslaunch.cluster=c1 c1-net");
  CHECK(CommandLine({"sh", "-c", "a b"}) == "sh -c 'a b'");
}

}  // namespace
}  // namespace ds
