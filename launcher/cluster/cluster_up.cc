// dslaunch cluster up: swarm, overlay, volumes, keys, image, containers,
// hostfile, then wait for SSH. Every resource is recorded in the state file
// the moment it exists, so an `up` that fails half-way is undone by `down`.
#include <chrono>
#include <filesystem>
#include <thread>

#include "common/files.h"
#include "common/strings.h"
#include "launcher/cluster/cluster.h"
#include "launcher/cluster/cluster_state.h"
#include "launcher/cluster/compose_files.h"
#include "launcher/cluster/docker_cli.h"
#include "launcher/cluster/image_context.h"
#include "launcher/cluster/up_settings.h"

namespace fs = std::filesystem;

namespace ds {
namespace {

constexpr const char* kGwbridge = "docker_gwbridge";

Status EnsureSwarm(const ClusterUpOptions& o, CommandRunner& runner, const ClusterPaths& paths, ClusterState* s,
                   std::ostream& out) {
  DS_ASSIGN_OR_RETURN(SwarmInfo swarm, Swarm(runner));
  if (s->joined) {
    if (swarm.state == "active" && !swarm.manager) return Status::OK();
    return Status::Unavailable("--join: this host must be a swarm worker of the manager's swarm (it is '" +
                               swarm.state + (swarm.manager ? "', a manager" : "'") +
                               "): docker swarm join --token ... as the manager's up printed");
  }
  if (swarm.state == "active" && swarm.manager) return Status::OK();
  if (swarm.state == "active") {
    return Status::Unavailable("this host is a swarm worker: run `dslaunch cluster up` on a swarm manager "
                               "(docker node ls there), and here `dslaunch cluster up --join` to add nodes");
  }
  if (swarm.state != "inactive") {
    return Status::Unavailable("this host's swarm is '" + swarm.state +
                               "' (docker info); fix it or leave it (docker swarm leave --force) first");
  }
  std::string addr = o.advertise_addr;
  if (addr.empty()) {
    DS_ASSIGN_OR_RETURN(DefaultRoute route, HostDefaultRoute());
    addr = route.ipv4;
  }
  out << "cluster " << s->name << ": docker swarm init --advertise-addr " << addr << std::endl;
  DS_RETURN_IF_ERROR(CaptureOk(runner, {"docker", "swarm", "init", "--advertise-addr", addr}).status());
  s->created_swarm = true;
  return SaveClusterState(*s, paths.state);
}

Status EnsureNetwork(CommandRunner& runner, const ClusterPaths& paths, ClusterState* s, std::ostream& out) {
  if (s->joined) return Status::OK();  // the manager's; a worker sees it once a container uses it (EnsureAnchor)
  DS_ASSIGN_OR_RETURN(bool exists, DockerHas(runner, "network", s->network));
  if (exists) {
    DS_ASSIGN_OR_RETURN(std::string kind, CaptureOk(runner, {"docker", "network", "inspect", "--format",
                                                            "{{.Driver}} {{.Attachable}}", s->network}));
    if (std::string(Trim(kind)) != "overlay true") {
      return Status::InvalidArgument("network " + s->network + " exists but is '" + std::string(Trim(kind)) +
                                     "' (driver, attachable), not an attachable overlay; remove it or pick "
                                     "another cluster name");
    }
    return Status::OK();
  }
  // The option is the underlay's MTU; VXLAN takes 50 bytes of it.
  Result<DefaultRoute> route = HostDefaultRoute();
  const int mtu = route.ok() ? route->mtu : 1500;
  out << "cluster " << s->name << ": overlay network " << s->network << " (MTU " << mtu - 50 << ")" << std::endl;
  DS_RETURN_IF_ERROR(CaptureOk(runner, {"docker", "network", "create", "--driver", "overlay", "--attachable",
                                        "--opt", "com.docker.network.driver.mtu=" + std::to_string(mtu),
                                        "--label", "org.dslaunch.cluster=" + s->name, s->network})
                         .status());
  s->created_network = true;
  return SaveClusterState(*s, paths.state);
}

Status EnsureVolumes(CommandRunner& runner, const ClusterPaths& paths, ClusterState* s) {
  for (const std::string& v : {s->checkpoint_volume, s->job_volume}) {
    DS_ASSIGN_OR_RETURN(bool exists, DockerHas(runner, "volume", v));
    if (exists) continue;
    DS_RETURN_IF_ERROR(
        CaptureOk(runner, {"docker", "volume", "create", "--label", "org.dslaunch.cluster=" + s->name, v}).status());
    s->created_volumes.push_back(v);
    DS_RETURN_IF_ERROR(SaveClusterState(*s, paths.state));
  }
  return Status::OK();
}

Status BuildImage(const ClusterUpOptions& o, CommandRunner& runner, const ClusterPaths& paths,
                  const std::string& docker_dir, ClusterState* s, std::ostream& out) {
  std::vector<std::string> binaries = o.binaries;
  if (binaries.empty()) {
    DS_ASSIGN_OR_RETURN(binaries, ClusterBinaries());
  }
  DS_RETURN_IF_ERROR(MakeImageContext(runner, docker_dir, binaries, paths.context));
  out << "cluster " << s->name << ": building image " << s->image << " from "
      << (s->base_image.empty() ? "the Dockerfile's CUDA base" : s->base_image) << std::endl;
  s->created_image = true;  // before the build: a half-built tag is ours too
  DS_RETURN_IF_ERROR(SaveClusterState(*s, paths.state));
  std::vector<std::string> argv = {"docker", "build", "--tag", s->image, "--label", "org.dslaunch.cluster=" + s->name};
  if (!s->base_image.empty()) {
    argv.push_back("--build-arg");
    argv.push_back("BASE_IMAGE=" + s->base_image);
  }
  argv.push_back(paths.context);
  DS_RETURN_IF_ERROR(CaptureOk(runner, argv).status());
  std::error_code ec;
  fs::remove_all(paths.context, ec);
  return Status::OK();
}

// --join: the keys must be the manager's (copied), never new ones.
Status CheckCopiedKeys(const ClusterPaths& paths) {
  const std::string node = paths.keys + "/node";
  if (fs::exists(node + "/ssh_host_ed25519_key") && fs::exists(node + "/authorized_keys")) return Status::OK();
  return Status::NotFound("--join: the cluster's node keys are not in " + node + ": copy that folder from the "
                          "manager, e.g. scp -r MANAGER:" + node + " " + paths.keys + "/");
}

// --join: a container on the overlay, so that compose on this swarm worker
// finds the external network (an attachable overlay is visible on a worker
// only while a container there uses it).
Status EnsureAnchor(CommandRunner& runner, const ClusterState& s) {
  const std::string anchor = s.name + "-anchor";
  DS_ASSIGN_OR_RETURN(bool exists, DockerHas(runner, "container", anchor));
  if (exists) return CaptureOk(runner, {"docker", "start", anchor}).status();
  return CaptureOk(runner, {"docker", "run", "--detach", "--init", "--name", anchor, "--network", s.network, "--label",
                            "org.dslaunch.cluster=" + s.name, "--label", "org.dslaunch.role=anchor", "--env",
                            "DSLAUNCH_ROLE=anchor", s.image})
      .status();
}

// Every container compose was to start is running (compose can return 0
// after a recreated container failed to start).
Status CheckRunning(CommandRunner& runner, std::vector<std::string> containers) {
  std::vector<std::string> argv = {"docker", "inspect", "--format", "{{.Name}} {{.State.Status}} {{.State.Error}}"};
  argv.insert(argv.end(), containers.begin(), containers.end());
  DS_ASSIGN_OR_RETURN(std::string out, CaptureOk(runner, argv));
  std::string stopped;
  for (const std::string& line : Split(std::string(Trim(out)), '\n')) {
    std::vector<std::string> words = Split(line, ' ');
    if (words.size() >= 2 && words[1] != "running") stopped += "\n  " + line.substr(line[0] == '/' ? 1 : 0);
  }
  if (stopped.empty()) return Status::OK();
  return Status::Unavailable("containers that docker-compose started are not running (docker logs NAME says why):" +
                             stopped);
}

// Polls `dslaunch check` in the controller until every node answers SSH.
Status WaitForSsh(const ClusterUpOptions& o, CommandRunner& runner, const std::string& controller,
                  const ClusterState& s, std::ostream& out) {
  out << "cluster " << s.name << ": waiting for " << s.nodes << " nodes to answer SSH" << std::endl;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.ssh_wait_s);
  std::vector<std::string> argv = {"docker", "exec", controller, "dslaunch", "check", "--connect-timeout", "5"};
  if (s.remote_nodes > 0) {  // only this host's nodes: the others come when their hosts join
    std::string include;
    for (const std::string& n : NodeNames(s)) include += (include.empty() ? "" : "@") + n;
    argv.insert(argv.end(), {"--include", include});
  }
  CommandResult last;
  while (true) {
    DS_ASSIGN_OR_RETURN(last, runner.Capture(argv));
    if (last.exit_code == 0) return Status::OK();
    if (std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // polling a condition, with a deadline
  }
  return Status::Timeout("not every node of cluster " + s.name + " answered SSH within " +
                         std::to_string(static_cast<int>(o.ssh_wait_s)) + " s; `dslaunch check` in the controller said:\n" +
                         last.out + last.err);
}

Status WriteHostfile(CommandRunner& runner, const ClusterPaths& paths, const std::string& controller,
                     const ClusterState& s) {
  const std::string text = ClusterHostfile(s.name, HostfileNodes(s), s.slots);
  DS_RETURN_IF_ERROR(WriteKnownHosts(paths, HostfileNodes(s)));
  DS_RETURN_IF_ERROR(WriteFileDurably(paths.hostfile, text, 0644));
  return CaptureOk(runner, {"docker", "exec", "-i", controller, "sh", "-c",
                            "cat >/job/hostfile.tmp && mv -f /job/hostfile.tmp /job/hostfile"},
                   text)
      .status();
}

}  // namespace

Status ClusterUp(const ClusterUpOptions& o, CommandRunner& runner, std::ostream& out) {
  DS_RETURN_IF_ERROR(CheckClusterName(o.name));
  DS_ASSIGN_OR_RETURN(const ClusterPaths paths, ClusterPathsOf(o.name));
  const bool existing = fs::exists(paths.state);
  ClusterState s;
  if (existing) {
    DS_ASSIGN_OR_RETURN(s, LoadClusterState(paths.state));
  } else if (o.replace) {
    return Status::NotFound("cluster " + o.name + " does not exist (" + paths.state + "); --replace restarts the "
                            "lost nodes of an existing cluster");
  }
  DS_RETURN_IF_ERROR(MakePrivateDir(paths.dir));
  std::error_code ec;
  fs::create_directories(paths.empty, ec);  // the data folder when there is none
  DS_ASSIGN_OR_RETURN(std::string docker_dir, DockerFilesDir());
  DS_RETURN_IF_ERROR(ApplyUpOptions(o, runner, paths, existing, &s));
  if (!existing) {
    DS_ASSIGN_OR_RETURN(bool gwbridge, DockerHas(runner, "network", kGwbridge));
    s.created_gwbridge = !gwbridge;
  }
  DS_RETURN_IF_ERROR(SaveClusterState(s, paths.state));

  if (!o.replace) {
    DS_RETURN_IF_ERROR(EnsureSwarm(o, runner, paths, &s, out));
    DS_RETURN_IF_ERROR(EnsureNetwork(runner, paths, &s, out));
    DS_RETURN_IF_ERROR(EnsureVolumes(runner, paths, &s));
    DS_RETURN_IF_ERROR(s.joined ? CheckCopiedKeys(paths) : MakeClusterKeys(runner, paths, s.name));
    DS_RETURN_IF_ERROR(BuildImage(o, runner, paths, docker_dir, &s, out));
    DS_RETURN_IF_ERROR(WriteComposeFiles(s, paths, docker_dir));
  }
  if (s.joined) DS_RETURN_IF_ERROR(EnsureAnchor(runner, s));
  const std::vector<std::string> nodes = NodeNames(s);
  const std::string controller = ControllerName(s.name);
  out << "cluster " << s.name << ": starting " << s.nodes << " nodes" << (s.joined ? "" : " and the controller")
      << std::endl;
  std::vector<std::string> up = {"up", "--detach", "--remove-orphans"};  // orphans: nodes beyond a smaller --nodes
  if (o.replace) up.push_back("--no-recreate");
  if (s.joined) {  // only this host's nodes: the controller runs on the manager
    for (const std::string& n : nodes) up.push_back(NodeService(s, n));
  }
  DS_RETURN_IF_ERROR(CaptureOk(runner, ComposeArgv(s, paths, up)).status());

  std::vector<std::string> all = nodes;
  if (!s.joined) all.push_back(controller);
  DS_RETURN_IF_ERROR(CheckRunning(runner, all));
  if (s.joined) {
    out << "cluster " << s.name << ": joined with " << nodes.size() << " nodes (" << nodes.front() << " .. "
        << nodes.back() << "); on the manager, dslaunch cluster status --name " << s.name
        << " shows when they answer\n";
    return Status::OK();
  }
  DS_RETURN_IF_ERROR(WriteHostfile(runner, paths, controller, s));
  DS_RETURN_IF_ERROR(WaitForSsh(o, runner, controller, s, out));

  out << "cluster " << s.name << ": up: " << nodes.size() << " nodes (";
  for (size_t i = 0; i < nodes.size(); ++i) out << (i ? ", " : "") << nodes[i];
  out << ") on overlay " << s.network << "; controller " << controller << "\n"
      << "  hostfile: /job/hostfile in the controller (a copy: " << paths.hostfile << ")\n"
      << "  workspace " << s.workspace << " and data " << s.data << " at their own paths, checkpoints in "
      << s.checkpoint_volume << " at /checkpoints\n"
      << "  run a job:  cd " << s.workspace << " && dslaunch cluster run --name " << s.name << " job.yaml\n"
      << "  nodes:      dslaunch cluster status --name " << s.name << "\n"
      << "  remove:     dslaunch cluster down --name " << s.name << "\n";
  DS_ASSIGN_OR_RETURN(std::string token, CaptureOk(runner, {"docker", "swarm", "join-token", "-q", "worker"}));
  DS_ASSIGN_OR_RETURN(SwarmInfo swarm, Swarm(runner));
  const int next = s.first_node + s.nodes;
  out << "  more hosts: " << (s.remote_nodes > 0 ? "the hostfile expects " + std::to_string(s.remote_nodes) +
                                                       " more nodes from " + s.name + "-node-" + std::to_string(next)
                                                 : std::string("up again with --remote-nodes M, then"))
      << "; on each other host:\n"
      << "    docker swarm join --token " << Trim(token) << " " << swarm.node_addr << ":2377\n"
      << "    copy " << paths.keys << "/node to the same folder there (scp -r)\n"
      << "    dslaunch cluster up --name " << s.name << " --join --first-node " << next << " --nodes M\n";
  return Status::OK();
}

}  // namespace ds
