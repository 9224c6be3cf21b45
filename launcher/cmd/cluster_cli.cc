#include "launcher/cmd/cluster_cli.h"

#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "launcher/cluster/cluster.h"
#include "launcher/cmd/completion.h"
#include "launcher/report/exit_status.h"

namespace ds {
namespace {

const char* kClusterHelp =
    "dslaunch cluster: a training cluster of Docker containers on an overlay network.\n\n"
    "Usage:\n"
    "  dslaunch cluster up [--name NAME] [--nodes N] [options]   make it (again: repairs; --replace: restart lost nodes)\n"
    "  dslaunch cluster status [--name NAME]                     containers, then dslaunch check from the controller\n"
    "  dslaunch cluster run [--name NAME] [dslaunch args] job.yaml  run dslaunch in the controller; Ctrl-C stops the job\n"
    "  dslaunch cluster down [--name NAME] [--keep-image] [--keep-checkpoints]  remove what up made\n"
    "The default NAME is dslaunch. Run `dslaunch cluster up --help` for up's options; docker/README.md walks\n"
    "through a cluster on several hosts.\n";

// Parses `args` into `app`: -1 to go on, kExitSuccess after printing the
// help, or InvalidArgument naming the verb.
Result<int> Parse(CLI::App& app, const std::vector<std::string>& args) {
  std::vector<std::string> rev(args.rbegin(), args.rend());
  try {
    app.parse(rev);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return kExitSuccess;
  } catch (const CLI::ParseError& e) {
    return Status::InvalidArgument(fmt::format("cluster {}: {}", app.get_name(), e.what()));
  }
  return -1;
}


// Each verb's options, declared on `app` and bound to `o` (parsing and
// completion both use them).
void DeclareUp(CLI::App& app, ClusterUpOptions& o) {
  app.add_option("--name", o.name, "cluster name (default dslaunch)");
  app.add_option("--nodes", o.nodes, "node containers on this host (default 2, or as the cluster has)")->check(CLI::Range(1, 1000));
  app.add_option("--slots", o.slots, "slots= of each node in the hostfile (default 1)")->check(CLI::Range(1, 1024));
  app.add_flag("--gpus", o.gpus, "give each node every GPU of the host (NVIDIA container toolkit; CUDA base image)");
  app.add_option("--base-image", o.base_image, "BASE_IMAGE of docker/Dockerfile (default dslaunch-base:bookworm when "
                 "present, else debian:bookworm; with --gpus a CUDA devel image)");
  app.add_option("--workspace", o.workspace, "host folder mounted at its own path in every container (default: here)")
      ->type_name("DIR");
  app.add_option("--data", o.data, "host folder mounted read-only at its own path (default /usr/share/datasets)")
      ->type_name("DIR");
  app.add_option("--shm-size", o.shm_size, "/dev/shm of each node (default 8g)");
  app.add_option("--checkpoint-volume", o.checkpoint_volume, "volume at /checkpoints (default NAME-checkpoints; an "
                 "existing one is used and never removed)");
  app.add_option("--advertise-addr", o.advertise_addr, "address for docker swarm init (default: the default route's IPv4)");
  app.add_flag("--replace", o.replace, "only start lost node containers again (no build, nothing recreated)");
  app.add_option("--remote-nodes", o.remote_nodes, "nodes that other hosts add with --join, listed in the hostfile "
                 "after this host's (default 0)")->check(CLI::Range(0, 100000));
  app.add_flag("--join", o.join, "on a swarm worker host: add nodes to the cluster a manager made (copy its "
               "keys/node folder first; no controller here)");
  app.add_option("--first-node", o.first_node, "with --join: the number of this host's first node")
      ->check(CLI::Range(2, 100000));
  app.add_option("--ssh-wait", o.ssh_wait_s, "seconds to wait for every node to answer SSH (default 120)")->check(CLI::Range(1.0, 3600.0));
}

void DeclareDown(CLI::App& app, ClusterDownOptions& o) {
  app.add_option("--name", o.name, "cluster name (default dslaunch)");
  app.add_flag("--keep-image", o.keep_image, "keep the built image (a later up starts sooner)");
  app.add_flag("--keep-checkpoints", o.keep_checkpoints, "keep the checkpoint volume (a later up uses it)");
}

const char* kUpAbout = "dslaunch cluster up: make (or repair) a cluster of Docker containers on an overlay network";
const char* kDownAbout = "dslaunch cluster down: remove exactly what `dslaunch cluster up` made";
const char* kStatusAbout = "dslaunch cluster status: the containers, then `dslaunch check` from the controller";

Result<int> Up(const std::vector<std::string>& args) {
  ClusterUpOptions o;
  CLI::App app{kUpAbout, "up"};
  DeclareUp(app, o);
  DS_ASSIGN_OR_RETURN(const int parsed, Parse(app, args));
  if (parsed >= 0) return parsed;
  std::unique_ptr<CommandRunner> runner = MakeProcessRunner();
  Status st = ClusterUp(o, *runner, std::cout);
  if (!st.ok())
    return st.Prefixed(
        fmt::format("cluster up (what was made is recorded: `dslaunch cluster down --name {}` removes it)", o.name));
  return kExitSuccess;
}

Result<int> Down(const std::vector<std::string>& args) {
  ClusterDownOptions o;
  CLI::App app{kDownAbout, "down"};
  DeclareDown(app, o);
  DS_ASSIGN_OR_RETURN(const int parsed, Parse(app, args));
  if (parsed >= 0) return parsed;
  std::unique_ptr<CommandRunner> runner = MakeProcessRunner();
  DS_RETURN_IF_ERROR(ClusterDown(o, *runner, std::cout).Prefixed("cluster down"));
  return kExitSuccess;
}

Result<int> StatusVerb(const std::vector<std::string>& args) {
  std::string name = "dslaunch";
  CLI::App app{kStatusAbout, "status"};
  app.add_option("--name", name, "cluster name (default dslaunch)");
  DS_ASSIGN_OR_RETURN(const int parsed, Parse(app, args));
  if (parsed >= 0) return parsed;
  std::unique_ptr<CommandRunner> runner = MakeProcessRunner();
  return ClusterStatus(name, *runner, std::cout);
}

// run: only a leading --name is ours; everything else is dslaunch's.
Result<int> Run(std::vector<std::string> args) {
  std::string name = "dslaunch";
  if (!args.empty() && (args[0] == "-h" || args[0] == "--help")) {
    std::cout << "usage: dslaunch cluster run [--name NAME] [dslaunch options] job.yaml\n"
                 "  runs dslaunch in the cluster's controller, from the current folder (inside the workspace),\n"
                 "  with the cluster's hostfile; Ctrl-C or killing this command stops the job everywhere.\n";
    return kExitSuccess;
  }
  if (!args.empty() && args[0].rfind("--name=", 0) == 0) {
    name = args[0].substr(7);
    args.erase(args.begin());
  } else if (!args.empty() && args[0] == "--name") {
    if (args.size() < 2) return Status::InvalidArgument("cluster run: --name needs a value");
    name = args[1];
    args.erase(args.begin(), args.begin() + 2);
  }
  if (args.empty()) return Status::InvalidArgument("cluster run: expected a job (dslaunch cluster run job.yaml)");
  return ClusterRun(name, args);
}

}  // namespace

Result<int> RunClusterCommand(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "-h" || args[0] == "--help") {
    std::cout << kClusterHelp;
    return args.empty() ? kExitUsage : kExitSuccess;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "up") return Up(rest);
  if (args[0] == "down") return Down(rest);
  if (args[0] == "status") return StatusVerb(rest);
  if (args[0] == "run") return Run(rest);
  return Status::InvalidArgument("cluster: unknown verb '" + args[0] + "': expected up, down, status or run");
}

void WithClusterCompletion(const std::function<void(const CompletionCommand&)>& use) {
  ClusterUpOptions up_options;
  ClusterDownOptions down_options;
  std::string name;
  CLI::App up{kUpAbout, "up"}, down{kDownAbout, "down"}, status{kStatusAbout, "status"};
  DeclareUp(up, up_options);
  DeclareDown(down, down_options);
  status.add_option("--name", name, "cluster name (default dslaunch)");
  CompletionCommand cluster{"cluster"};
  cluster.no_options = true;
  // `cluster run` takes dslaunch's own options (no app: the main one).
  cluster.words = {{"up", &up}, {"down", &down}, {"status", &status}, {"run"}};
  use(cluster);
}

}  // namespace ds
