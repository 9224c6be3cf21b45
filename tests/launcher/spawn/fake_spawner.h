// FakeSpawner: the Spawner for tests (LevelDB's EnvWrapper idea): no
// processes, no sockets. Start() records every spec and returns a handle per
// spec, or the error the test queued for that host with FailHost(). The test
// ends agent i with End(i, status), which makes its Running() false and its
// exit_fd() readable, as a real agent's exit would. Terminate() ends a fake
// agent with 128+SIGTERM. The spawner keeps each agent's state alive, so
// End() is safe after the caller dropped the handle. One thread at a time
// (AgentFleet calls Start() from a thread of its own; the test reads after
// the fleet has its handles).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "launcher/spawn/spawner.h"

namespace ds {

struct FakeAgentState;  // shared by a fake handle and its spawner

class FakeSpawner final : public Spawner {
 public:
  FakeSpawner();
  ~FakeSpawner() override;

  // Start() will fail for `host` with `status` (once per queued error).
  void FailHost(const std::string& host, Status status);
  // Start() runs `hook` first (e.g. to hold it until the test lets it go).
  void BeforeStart(std::function<void()> hook) { before_start_ = std::move(hook); }
  std::vector<Result<std::unique_ptr<AgentHandle>>> Start(const std::vector<AgentSpec>& specs) override;
  // Plays a step launcher (srun, mpirun, pdsh): one stdin for all its agents.
  void ShareOnePayload() { shares_payload_ = true; }
  bool SharesPayload() const override { return shares_payload_; }

  // Every spec that got a handle, in start order (index = agent number).
  const std::vector<AgentSpec>& started() const { return started_; }
  // Agent i exits with `status` (ExitStatus), raising its exit_fd. No-op
  // if it has already ended.
  void End(size_t i, int status);
  // Whether Terminate() was called on agent i's handle.
  bool Terminated(size_t i) const;

 private:
  std::vector<AgentSpec> started_;
  std::vector<std::shared_ptr<FakeAgentState>> agents_;
  std::map<std::string, std::vector<Status>> failures_;
  std::function<void()> before_start_;
  bool shares_payload_ = false;
};

}  // namespace ds
