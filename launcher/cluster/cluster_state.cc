#include "launcher/cluster/cluster_state.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <regex>

#include <fmt/format.h>

#include "common/env_registry.h"
#include "common/files.h"
#include "common/strings.h"

namespace ds {
namespace {

std::string Bool(bool b) { return b ? "true" : "false"; }

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

}  // namespace

Status CheckClusterName(const std::string& name) {
  bool ok = !name.empty() && name.size() <= 32 && name[0] >= 'a' && name[0] <= 'z';
  for (char c : name) ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-');
  if (ok) return Status::OK();
  return Status::InvalidArgument("cluster name '" + name +
                                 "': expected a lower-case letter, then letters, digits or '-', at most 32 "
                                 "characters (it names the compose project, network and containers)");
}

Status CheckOwnDir(const std::string& dir) {
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) return Status::NotFound(fmt::format("{}: {}", dir, std::strerror(errno)));
  if (!S_ISDIR(st.st_mode))
    return Status::PermissionDenied(fmt::format("{} is not a directory (a symbolic link?): refusing to use it", dir));
  if (st.st_uid != ::geteuid() || (st.st_mode & 022))
    return Status::PermissionDenied(fmt::format(
        "{} has owner uid {} and mode {:o}: expected a folder of yours (uid {}) that nobody else may write to", dir,
        st.st_uid, st.st_mode & 0777, ::geteuid()));
  return Status::OK();
}

Status CheckShmSize(const std::string& v) {
  static const std::regex kDockerSize(R"(^[0-9]+(\.[0-9]+)?([bkmgtpBKMGTP][iI]?[bB]?)?$)");
  if (v.size() <= 32 && std::regex_match(v, kDockerSize)) return Status::OK();
  return Status::InvalidArgument("--shm-size '" + Printable(v) +
                                 "': expected a size such as 8g, 512m or 1.5GiB (a number and a unit)");
}

namespace {

// What compose and Docker will be given from the state file: the same rules
// as the command line, so a hand-edited file cannot inject lines or options.
Status CheckStateValues(const ClusterState& s) {
  static const std::regex kDockerRef(R"(^[A-Za-z0-9][A-Za-z0-9_.:/@-]{0,254}$)");
  for (const std::string* ref : {&s.base_image, &s.image, &s.network, &s.checkpoint_volume, &s.job_volume})
    if (!ref->empty() && !std::regex_match(*ref, kDockerRef))
      return Status::InvalidArgument("'" + Printable(*ref) + "': expected a Docker image, network or volume name");
  for (const std::string& v : s.created_volumes)
    if (!std::regex_match(v, kDockerRef)) return Status::InvalidArgument("'" + Printable(v) + "': expected a volume name");
  for (const std::string* path : {&s.workspace, &s.data})
    if (!path->empty() && ((*path)[0] != '/' || path->find_first_of(":$\"'") != std::string::npos))
      return Status::InvalidArgument("'" + Printable(*path) + "': expected an absolute folder without ':', '$' or quotes");
  if (!s.shm_size.empty()) DS_RETURN_IF_ERROR(CheckShmSize(s.shm_size));
  return Status::OK();
}

}  // namespace

Result<ClusterState> LoadClusterState(const std::string& path) {
  DS_RETURN_IF_ERROR(CheckOwnDir(std::filesystem::path(path).parent_path().string()));
  DS_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, "cluster state"));
  ClusterState s;
  std::map<std::string, std::string*> strings = {
      {"name", &s.name}, {"base_image", &s.base_image}, {"image", &s.image}, {"network", &s.network},
      {"checkpoint_volume", &s.checkpoint_volume}, {"job_volume", &s.job_volume},
      {"workspace", &s.workspace}, {"data", &s.data}, {"shm_size", &s.shm_size}};
  std::map<std::string, bool*> bools = {
      {"gpus", &s.gpus}, {"joined", &s.joined}, {"created_swarm", &s.created_swarm}, {"created_gwbridge", &s.created_gwbridge},
      {"created_network", &s.created_network}, {"created_image", &s.created_image}};
  std::map<std::string, int*> counts = {
      {"nodes", &s.nodes}, {"first_node", &s.first_node}, {"remote_nodes", &s.remote_nodes}, {"slots", &s.slots}};
  int lineno = 0;
  for (const std::string& raw : Split(text, '\n')) {
    ++lineno;
    std::string line(Trim(raw));
    if (line.empty() || line[0] == '#') continue;
    auto bad = [&](const std::string& why) {
      return Status::InvalidArgument(path + ":" + std::to_string(lineno) + ": " + why +
                                     " (the file is written by dslaunch cluster up; remove the cluster with "
                                     "docker commands and this folder if it was edited by hand)");
    };
    size_t eq = line.find('=');
    if (eq == std::string::npos) return bad("expected key=value, got '" + line + "'");
    std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (auto it = strings.find(key); it != strings.end()) {
      *it->second = value;
    } else if (auto b = bools.find(key); b != bools.end()) {
      if (value != "true" && value != "false") return bad(key + ": expected true or false, got '" + value + "'");
      *b->second = value == "true";
    } else if (auto c = counts.find(key); c != counts.end()) {
      char* end = nullptr;
      long n = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || n < 0 || n > 100000) return bad(key + ": expected a count, got '" + value + "'");
      *c->second = static_cast<int>(n);
    } else if (key == "created_volumes") {
      for (const std::string& v : Split(value, ',')) {
        if (!v.empty()) s.created_volumes.push_back(v);
      }
    } else {
      return bad("unknown key '" + key + "'");
    }
  }
  DS_RETURN_IF_ERROR(CheckClusterName(s.name));
  if (Status st = CheckStateValues(s); !st.ok())
    return Status::InvalidArgument(path + ": " + st.message() +
                                   " (the file is written by dslaunch cluster up; was it edited by hand?)");
  return s;
}

Status SaveClusterState(const ClusterState& s, const std::string& path) {
  std::string text = "# dslaunch cluster state: what `dslaunch cluster up` made; read by down\n";
  auto put = [&](const std::string& k, const std::string& v) { text += k + "=" + v + "\n"; };
  put("name", s.name);
  put("nodes", std::to_string(s.nodes));
  put("first_node", std::to_string(s.first_node));
  put("remote_nodes", std::to_string(s.remote_nodes));
  put("joined", Bool(s.joined));
  put("slots", std::to_string(s.slots));
  put("gpus", Bool(s.gpus));
  put("base_image", s.base_image);
  put("image", s.image);
  put("network", s.network);
  put("checkpoint_volume", s.checkpoint_volume);
  put("job_volume", s.job_volume);
  put("workspace", s.workspace);
  put("data", s.data);
  put("shm_size", s.shm_size);
  put("created_swarm", Bool(s.created_swarm));
  put("created_gwbridge", Bool(s.created_gwbridge));
  put("created_network", Bool(s.created_network));
  put("created_image", Bool(s.created_image));
  put("created_volumes", Join(s.created_volumes));
  return WriteFileDurably(path, text, 0600);
}

Result<std::string> ClusterRoot() {
  if (std::string dir = EnvString("DSLAUNCH_CLUSTER_DIR"); !dir.empty()) return dir;
  if (::geteuid() == 0) return std::string("/var/lib/dslaunch/clusters");
  auto home = GetAnyEnv("HOME");
  if (!home || home->empty() || (*home)[0] != '/')
    return Status::InvalidArgument(
        "HOME is not set: dslaunch cluster keeps its clusters' keys and state in $HOME/.local/state/dslaunch/"
        "clusters (never under a shared /tmp); set HOME or DSLAUNCH_CLUSTER_DIR to a folder of yours");
  return *home + "/.local/state/dslaunch/clusters";
}

Result<ClusterPaths> ClusterPathsOf(const std::string& name) {
  DS_ASSIGN_OR_RETURN(std::string root, ClusterRoot());
  return PathsOf(name, root);
}

ClusterPaths PathsOf(const std::string& name, const std::string& root) {
  ClusterPaths p;
  p.dir = root + "/" + name;
  p.state = p.dir + "/state";
  p.keys = p.dir + "/keys";
  p.compose = p.dir + "/compose";
  p.compose_env = p.compose + "/compose.env";
  p.context = p.dir + "/context";
  p.hostfile = p.dir + "/hostfile";
  p.empty = p.dir + "/empty";
  return p;
}

}  // namespace ds
