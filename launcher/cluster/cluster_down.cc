// dslaunch cluster down: removes what `up` recorded in the state file, in
// the reverse order, and nothing else. Resources someone else made (a swarm
// this host was already in, a volume given with --checkpoint-volume) stay.
#include <chrono>
#include <filesystem>
#include <set>
#include <thread>

#include "common/strings.h"
#include "launcher/cluster/cluster.h"
#include "launcher/cluster/cluster_state.h"
#include "launcher/cluster/compose_files.h"
#include "launcher/cluster/docker_cli.h"

namespace fs = std::filesystem;

namespace ds {
namespace {

// Runs one removal; a failure is remembered and reported at the end, and the
// other removals still happen.
struct Removals {
  CommandRunner& runner;
  std::ostream& out;
  std::vector<std::pair<std::string, std::string>> failures;  // what, why

  // `busy_s`: how long to retry while Docker says "in use" (a swarm network
  // is released a moment after its last container is gone).
  void Run(const std::string& what, const std::vector<std::string>& argv, double busy_s = 0) {
    Result<std::string> r = CaptureOk(runner, argv);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(busy_s);
    while (!r.ok() && r.status().message().find("in use") != std::string::npos &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));  // polling Docker's state, with a deadline
      r = CaptureOk(runner, argv);
    }
    if (r.ok()) {
      out << "  removed " << what << std::endl;
    } else {
      failures.emplace_back(what, r.status().message());
    }
  }
};

// Every container of the cluster, whether compose still knows it or not (a
// half-made cluster, a container started by hand from its image).
Status RemoveContainers(Removals& rm, const ClusterState& s, const ClusterPaths& paths) {
  if (fs::exists(paths.compose + "/nodes.yml")) {
    // Its failure is not ours to report: whatever it leaves, the sweep by
    // label below removes.
    Result<std::string> r = CaptureOk(rm.runner, ComposeArgv(s, paths, {"down", "--remove-orphans", "--timeout", "5"}));
    if (r.ok()) rm.out << "  removed the containers (docker-compose down)" << std::endl;
  }
  DS_ASSIGN_OR_RETURN(std::string left, CaptureOk(rm.runner, {"docker", "ps", "-aq", "--filter",
                                                              "label=org.dslaunch.cluster=" + s.name}));
  for (const std::string& id : Split(std::string(Trim(left)), '\n')) {
    if (!id.empty()) rm.Run("container " + id, {"docker", "rm", "--force", "--volumes", id});
  }
  return Status::OK();
}

// Leaves the swarm `up` created unless something else now uses it.
Status LeaveSwarm(Removals& rm, const ClusterState& s) {
  DS_ASSIGN_OR_RETURN(SwarmInfo swarm, Swarm(rm.runner));
  if (swarm.state != "active") return Status::OK();
  DS_ASSIGN_OR_RETURN(std::string overlays, CaptureOk(rm.runner, {"docker", "network", "ls", "--filter", "driver=overlay",
                                                                  "--format", "{{.Name}}"}));
  std::string others;
  for (const std::string& n : Split(std::string(Trim(overlays)), '\n')) {
    // Our own network is still there only when Docker would not remove it:
    // leaving the swarm does.
    if (!n.empty() && n != "ingress" && !(s.created_network && n == s.network)) others += " " + n;
  }
  std::string services;
  if (swarm.manager) {
    DS_ASSIGN_OR_RETURN(services, CaptureOk(rm.runner, {"docker", "service", "ls", "-q"}));
  }
  if (!others.empty() || !Trim(services).empty()) {
    rm.out << "  kept the swarm cluster " << s.name << " created: still used by" << others
           << (Trim(services).empty() ? "" : " and swarm services") << "\n";
    return Status::OK();
  }
  rm.Run("this host's swarm membership (created by up)", {"docker", "swarm", "leave", "--force"});
  return Status::OK();
}

}  // namespace

Status ClusterDown(const ClusterDownOptions& o, CommandRunner& runner, std::ostream& out) {
  const std::string& name = o.name;
  DS_RETURN_IF_ERROR(CheckClusterName(name));
  DS_ASSIGN_OR_RETURN(const ClusterPaths paths, ClusterPathsOf(name));
  if (!fs::exists(paths.state)) {
    out << "cluster " << name << ": nothing to remove (no " << paths.state << ")\n";
    return Status::OK();
  }
  DS_ASSIGN_OR_RETURN(ClusterState s, LoadClusterState(paths.state));
  out << "cluster " << name << ": down\n";
  Removals rm{runner, out, {}};
  DS_RETURN_IF_ERROR(RemoveContainers(rm, s, paths));
  for (const std::string& v : s.created_volumes) {
    if (o.keep_checkpoints && v == s.checkpoint_volume) {
      out << "  kept volume " << v << " (--keep-checkpoints)" << std::endl;
      continue;
    }
    DS_ASSIGN_OR_RETURN(bool has, DockerHas(runner, "volume", v));
    if (has) {
      rm.Run("volume " + v + (v == s.checkpoint_volume ? " and the checkpoints in it (--keep-checkpoints keeps them)" : ""),
             {"docker", "volume", "rm", v});
    }
  }
  if (s.created_network) {
    DS_ASSIGN_OR_RETURN(bool has, DockerHas(runner, "network", s.network));
    if (has) rm.Run("network " + s.network, {"docker", "network", "rm", s.network}, 5);
  }
  if (s.created_image && !o.keep_image) {
    // The image and the older builds each `up` left untagged: all carry the label.
    DS_ASSIGN_OR_RETURN(std::string ids, CaptureOk(runner, {"docker", "images", "--quiet", "--filter",
                                                            "label=org.dslaunch.cluster=" + s.name}));
    std::set<std::string> seen;
    for (const std::string& id : Split(std::string(Trim(ids)), '\n')) {
      if (!id.empty() && seen.insert(id).second) rm.Run("image " + id, {"docker", "image", "rm", "--force", id});
    }
  }
  if (s.created_swarm) {
    DS_RETURN_IF_ERROR(LeaveSwarm(rm, s));
    // A network "in use by task" with no container left is a known Docker
    // bug (moby/moby#31066); leaving the swarm removed it.
    DS_ASSIGN_OR_RETURN(bool has, DockerHas(runner, "network", s.network));
    if (!has) std::erase_if(rm.failures, [&](const auto& f) { return f.first == "network " + s.network; });
  }
  if (s.created_gwbridge) {
    DS_ASSIGN_OR_RETURN(bool has, DockerHas(runner, "network", "docker_gwbridge"));
    DS_ASSIGN_OR_RETURN(SwarmInfo swarm, Swarm(runner));
    // In a swarm, docker_gwbridge belongs to it; after leaving, it is ours.
    if (has && swarm.state == "inactive") rm.Run("network docker_gwbridge (created by up)", {"docker", "network", "rm", "docker_gwbridge"});
  }
  if (!rm.failures.empty()) {
    std::string why;
    for (const auto& [what, message] : rm.failures) why += "\n  " + what + ": " + message;
    return Status::Unavailable("cluster " + name + ": some of what up made could not be removed (the state in " +
                               paths.dir + " is kept; run down again):" + why);
  }
  std::error_code ec;
  fs::remove_all(paths.dir, ec);
  if (ec) return Status::IOError("cannot remove " + paths.dir + ": " + ec.message());
  out << "cluster " << name << ": removed\n";
  return Status::OK();
}

}  // namespace ds
