#include "launcher/cluster/compose_files.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/files.h"
#include "launcher/cluster/cluster_state.h"
#include "common/strings.h"

namespace fs = std::filesystem;

namespace ds {
namespace {

std::vector<std::string> Numbered(const std::string& name, int first, int count) {
  std::vector<std::string> names;
  for (int i = first; i < first + count; ++i) names.push_back(name + "-node-" + std::to_string(i));
  return names;
}

}  // namespace

Status WriteComposeFiles(const ClusterState& s, const ClusterPaths& paths, const std::string& docker_dir) {
  DS_RETURN_IF_ERROR(MakePrivateDir(paths.compose));
  for (const char* f : {"docker-compose.yml", "docker-compose.gpu.yml"}) {
    DS_ASSIGN_OR_RETURN(std::string text, ReadTextFile(docker_dir + "/" + f, "compose file"));
    DS_RETURN_IF_ERROR(WriteFileDurably(paths.compose + "/" + f, text, 0600));
  }
  std::string env = "# written by dslaunch cluster up; the variables of docker-compose.yml\n";
  auto put = [&](const std::string& k, const std::string& v) { env += k + "=" + v + "\n"; };
  for (const ClusterStateField& f : ClusterStateFields())  // the state's fields that are compose variables
    if (f.compose_var[0] != '\0') put(f.compose_var, FieldText(s, f));
  put("DSLAUNCH_KEYS", paths.keys);  // not the state's: where this host keeps the cluster's keys
  DS_RETURN_IF_ERROR(WriteFileDurably(paths.compose_env, env, 0600));
  // One service per node: compose's own replicas would be named t1_node_1,
  // and neither SSH nor DNS labels allow '_'.
  const char* base = s.gpus ? "{file: docker-compose.gpu.yml, service: gpu-node}"
                            : "{file: docker-compose.yml, service: node}";
  std::string nodes = "# written by dslaunch cluster up: the nodes of cluster " + s.name + "\nversion: \"3.8\"\nservices:\n";
  for (const std::string& n : NodeNames(s)) {
    nodes += "  " + NodeService(s, n) + ":\n    extends: " + base + "\n    container_name: " + n +
             "\n    hostname: " + n + "\n    profiles: [nodes]\n";
  }
  return WriteFileDurably(paths.compose + "/nodes.yml", nodes, 0600);
}

std::vector<std::string> NodeNames(const ClusterState& s) { return Numbered(s.name, s.first_node, s.nodes); }

std::vector<std::string> HostfileNodes(const ClusterState& s) {
  return Numbered(s.name, s.first_node, s.nodes + s.remote_nodes);
}

std::string ControllerName(const std::string& cluster) { return cluster + "-controller"; }

std::string NodeService(const ClusterState& s, const std::string& node) { return node.substr(s.name.size() + 1); }

Status MakePrivateDir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::IOError("cannot create " + dir + ": " + ec.message());
  DS_RETURN_IF_ERROR(CheckOwnDir(dir));  // made by someone else first, or a symlink: refused
  if (::chmod(dir.c_str(), 0700) != 0) return Status::IOError("cannot chmod 700 " + dir + ": " + std::strerror(errno));
  return Status::OK();
}


std::vector<std::string> ComposeArgv(const ClusterState& s, const ClusterPaths& paths,
                                     const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"docker-compose", "--project-name", s.name, "--env-file", paths.compose_env,
                                   "--profile", "nodes", "-f", paths.compose + "/docker-compose.yml",
                                   "-f", paths.compose + "/nodes.yml"};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

Status MakeClusterKeys(CommandRunner& runner, const ClusterPaths& paths, const std::string& name) {
  const std::string node = paths.keys + "/node", controller = paths.keys + "/controller";
  DS_RETURN_IF_ERROR(MakePrivateDir(node));
  DS_RETURN_IF_ERROR(MakePrivateDir(controller));
  const std::string comment = "dslaunch-cluster-" + name;
  for (const std::string& key : {node + "/ssh_host_ed25519_key", controller + "/id_ed25519"}) {
    if (fs::exists(key)) continue;
    DS_RETURN_IF_ERROR(CaptureOk(runner, {"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", key}).status());
  }
  DS_ASSIGN_OR_RETURN(std::string client_pub, ReadTextFile(controller + "/id_ed25519.pub", "cluster client key"));
  DS_RETURN_IF_ERROR(WriteFileDurably(node + "/authorized_keys", client_pub, 0600));
  const std::string in = "/etc/dslaunch/keys";  // where docker-compose.yml mounts keys/controller
  return WriteFileDurably(controller + "/ssh_config",
                             "# the controller's ssh settings (DSLAUNCH_SSH_CONFIG), written by dslaunch cluster up\n"
                             "Host *\n  User root\n  IdentityFile " + in + "/id_ed25519\n  IdentitiesOnly yes\n"
                             "  UserKnownHostsFile " + in + "/known_hosts\n  StrictHostKeyChecking yes\n",
                             0600);
}

Status WriteKnownHosts(const ClusterPaths& paths, const std::vector<std::string>& node_names) {
  DS_ASSIGN_OR_RETURN(std::string pub, ReadTextFile(paths.keys + "/node/ssh_host_ed25519_key.pub", "cluster host key"));
  std::vector<std::string> words = Split(std::string(Trim(pub)), ' ');
  if (words.size() < 2) return Status::IOError(paths.keys + "/node/ssh_host_ed25519_key.pub: not an OpenSSH public key");
  std::string text;
  for (const std::string& n : node_names) text += n + " " + words[0] + " " + words[1] + "\n";
  return WriteFileDurably(paths.keys + "/controller/known_hosts", text, 0644);
}

std::string ClusterHostfile(const std::string& name, const std::vector<std::string>& node_names, int slots) {
  std::string text = "# the nodes of dslaunch cluster " + name + " (written by dslaunch cluster up; the controller is not a node)\n";
  for (const std::string& n : node_names) text += n + " slots=" + std::to_string(slots) + "\n";
  return text;
}

}  // namespace ds
