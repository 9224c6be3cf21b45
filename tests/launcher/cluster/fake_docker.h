// FakeDocker: a CommandRunner that plays a Docker daemon (swarm, networks,
// volumes, images, containers), docker-compose, ssh-keygen and ldd, keeping
// their state in memory and recording every command. Enough of each tool for
// the cluster logic; unknown commands fail the way a missing tool would.
// Not thread-safe.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "launcher/cluster/command_runner.h"

namespace ds::testing {

class FakeDocker : public CommandRunner {
 public:
  std::string swarm = "inactive";  // LocalNodeState
  bool manager = false;
  std::set<std::string> networks = {"bridge", "host", "none"};
  std::set<std::string> overlays;  // the networks created with --driver overlay (ingress once in a swarm)
  std::set<std::string> attachable_elsewhere;  // a swarm worker: overlays of the manager it can attach to
  std::set<std::string> volumes;
  std::set<std::string> images;
  std::set<std::string> containers;  // running
  std::set<std::string> wont_start;  // containers compose creates but that exit at once
  std::string fail_on;               // a command line containing this exits 1 ("" = none)
  std::vector<std::string> commands; // every command line run, in order

  Result<CommandResult> Capture(const std::vector<std::string>& argv, const std::string& input) override;
  Result<int> Passthrough(const std::vector<std::string>& argv) override;

  // How many recorded command lines contain `text`.
  int Count(const std::string& text) const;

 private:
  CommandResult Docker(const std::vector<std::string>& argv);
  CommandResult Compose(const std::vector<std::string>& argv);
};

}  // namespace ds::testing
