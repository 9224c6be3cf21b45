// SshSpawner: starts one dsagent per node over libssh (`--launcher ssh`, the
// default for non-local hosts). One session per host, opened in parallel by
// a pool of at most SshOptions::fanout threads; each agent runs as
// `exec <argv>` (every word shell-quoted) and gets AgentSpec::stdin_payload
// (the job secret) on its stdin, never on its command line. With
// SshOptions::ship_agent the local dsagent is first copied to a per-job temp
// dir (removed when the agent ends). Each handle relays the agent's own
// stdout/stderr lines to diagnostics (subsystem AGENT, prefixed by the host)
// from a thread of its own. Start() one thread at a time; handles are
// independent of the spawner and of each other.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "launcher/spawn/spawner.h"
#include "launcher/spawn/ssh/ssh_session.h"

namespace ds {

class SshSpawner : public Spawner {
 public:
  explicit SshSpawner(SshOptions options) : options_(std::move(options)) {}

  // One result per spec, same order. Errors start with the host name and
  // keep ssh's reason ("n2: connection refused").
  std::vector<Result<std::unique_ptr<AgentHandle>>> Start(const std::vector<AgentSpec>& specs) override;

 private:
  Result<std::unique_ptr<AgentHandle>> StartOne(const AgentSpec& spec);
  SshOptions options_;
};

std::unique_ptr<Spawner> MakeSshSpawner(const SshOptions& options);

}  // namespace ds
