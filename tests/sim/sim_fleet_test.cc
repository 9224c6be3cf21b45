// dssim's agents are the real AgentControl (label `scale`): what only the
// agent's own logic does shows at scale too. Here: a coordinator that stops
// answering (SIGSTOP, a hung launcher) is left by every agent once it has
// been silent for heartbeat_timeout, each with exit code 4, as dsagent does.
#include "sim/sim_fleet.h"

#include <signal.h>

#include <thread>

#include <catch2/catch.hpp>

#include "common/fd_limit.h"
#include "sim/coordinator_process.h"
#include "wire/hmac_auth.h"

namespace ds::sim {
namespace {

TEST_CASE("scale: 256 agents leave a coordinator that stopped answering, after their heartbeat_timeout", "[scale]") {
  const int n = 256;
  REQUIRE(RaiseFdLimit(SimDescriptors(n, 1, false), "the simulated agents").ok());
  CoordinatorSpec spec;
  spec.nodes = n;
  spec.store = false;
  spec.heartbeat_interval = 0.2;
  spec.heartbeat_timeout = 1.0;
  spec.job_id = "dssim";
  spec.secret = RandomHex(32);
  spec.agent_token = RandomHex(32);
  auto coord = CoordinatorProcess::Start(spec);
  REQUIRE(coord.ok());

  asio::io_context io;
  auto guard = asio::make_work_guard(io);
  FleetConfig fc;
  fc.agents = n;
  fc.job_id = spec.job_id;
  fc.token = spec.agent_token;
  fc.coordinator = asio::ip::tcp::endpoint(asio::ip::make_address_v4("127.0.0.1"), static_cast<uint16_t>((*coord)->port()));
  fc.heartbeat_interval = 0.2;
  fc.heartbeat_timeout = 1.0;
  SimFleet fleet(io, fc);
  std::thread io_thread([&io] { io.run(); });
  fleet.ConnectAll();
  const bool assigned = fleet.WaitUntil(
      [n](const FleetSeen& s) { return s.gen(0) && s.gen(0)->assigned == n; }, std::chrono::seconds(40));
  ::kill((*coord)->pid(), SIGSTOP);
  const bool left = assigned && fleet.WaitUntil([n](const FleetSeen& s) { return s.unexpected_ends == n; },
                                                std::chrono::seconds(40));
  ::kill((*coord)->pid(), SIGKILL);  // reaped by its destructor
  io.stop();
  io_thread.join();

  const FleetSeen s = fleet.Seen();
  INFO("registered " << s.ready << ", left " << s.unexpected_ends << ", shut down " << s.shutdowns);
  CHECK(assigned);
  CHECK(left);
  CHECK(s.shutdowns == 0);
  REQUIRE_FALSE(s.errors.empty());
  CHECK(s.errors[0].find("the agent left with exit code 4") != std::string::npos);
}

}  // namespace
}  // namespace ds::sim
