#include "launcher/cluster/docker_cli.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "common/files.h"
#include "common/netif.h"
#include "common/strings.h"

namespace ds {

Result<SwarmInfo> Swarm(CommandRunner& runner) {
  DS_ASSIGN_OR_RETURN(std::string out, CaptureOk(runner, {"docker", "info", "--format",
                                                          "{{.Swarm.LocalNodeState}} {{.Swarm.ControlAvailable}} {{.Swarm.NodeAddr}}"}));
  std::vector<std::string> words = Split(std::string(Trim(out)), ' ');
  if (words.size() < 2) return Status::Unavailable("docker info: unexpected swarm state '" + std::string(Trim(out)) + "'");
  return SwarmInfo{words[0], words[1] == "true", words.size() > 2 ? words[2] : ""};
}

Result<bool> DockerHas(CommandRunner& runner, const std::string& kind, const std::string& name) {
  DS_ASSIGN_OR_RETURN(CommandResult r, runner.Capture({"docker", kind, "inspect", name}));
  if (r.exit_code == 0) return true;
  std::string err = r.err;
  std::transform(err.begin(), err.end(), err.begin(), [](unsigned char c) { return std::tolower(c); });
  if (err.find("no such") != std::string::npos || err.find("not found") != std::string::npos) return false;
  return Status::Unavailable("docker " + kind + " inspect " + name + ": " + std::string(Trim(r.err)));
}

Result<DefaultRoute> HostDefaultRoute() {
  // No packet is sent: the kernel only picks the route to a public address.
  Result<Route> route = RouteTo("198.51.100.1");
  if (!route.ok() || route->local_addr.find(':') != std::string::npos) {
    return Status::Unavailable("this host has no IPv4 default route"
                               " (docker swarm init needs an IPv4 address to advertise; give one with --advertise-addr)");
  }
  DefaultRoute out{route->ifname, route->local_addr, 1500};
  Result<std::string> mtu = ReadTextFile("/sys/class/net/" + route->ifname + "/mtu", "MTU of");
  if (mtu.ok()) out.mtu = std::atoi(std::string(Trim(*mtu)).c_str());
  return out;
}

}  // namespace ds
