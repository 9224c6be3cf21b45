#include <catch2/catch.hpp>

#include "agent/agent.h"

namespace ds {
namespace {

TEST_CASE("agent args: the documented command line parses", "[agent]") {
  auto o = ParseAgentArgs({"--coordinator", "10.0.0.1:4000", "--node-index", "2", "--job-id", "abc", "--bind",
                           "127.0.0.3", "--host", "w2", "--heartbeat-timeout", "3s"});
  REQUIRE(o.ok());
  CHECK(o->coordinator == "10.0.0.1:4000");
  CHECK(o->node_index == 2);
  CHECK(o->job_id == "abc");
  CHECK(o->bind_addr == "127.0.0.3");
  CHECK(o->host == "w2");
  CHECK(o->heartbeat_timeout == 3.0);
}

TEST_CASE("agent args: errors name the flag", "[agent]") {
  CHECK(ParseAgentArgs({"--node-index", "x"}).status().message() ==
        "--node-index: expected a non-negative integer, got 'x'");
  CHECK(ParseAgentArgs({"--node-index", "1", "--job-id", "j"}).status().message() == "--coordinator is required");
  CHECK(ParseAgentArgs({"--secret", "oops"}).status().message() == "unknown option '--secret'");
  CHECK(ParseAgentArgs({"--coordinator"}).status().message() == "--coordinator: expected a value");
}

}  // namespace
}  // namespace ds
