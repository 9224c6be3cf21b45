// Questions `dslaunch cluster` asks Docker, each one docker command through a
// CommandRunner, answered as data. Errors carry the command and Docker's own
// message (CaptureOk).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/cluster/command_runner.h"

namespace ds {

struct SwarmInfo {
  std::string state;     // Docker's LocalNodeState: inactive, pending, active, error, locked
  bool manager = false;  // this host can create overlay networks
  std::string node_addr; // the address other hosts join (when active)
};
Result<SwarmInfo> Swarm(CommandRunner& runner);

// Whether `docker <kind> inspect name` finds it (kind: network, volume,
// image, container). An error when Docker cannot be asked at all.
Result<bool> DockerHas(CommandRunner& runner, const std::string& kind, const std::string& name);

// The host's default route: its interface, the interface's IPv4 address (what
// `docker swarm init --advertise-addr` needs) and MTU.
struct DefaultRoute {
  std::string ifname;
  std::string ipv4;
  int mtu = 1500;
};
Result<DefaultRoute> HostDefaultRoute();

}  // namespace ds
