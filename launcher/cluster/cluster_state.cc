#include "launcher/cluster/cluster_state.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <regex>

#include <fmt/format.h>

#include "common/env_registry.h"
#include "common/files.h"
#include "common/strings.h"

namespace ds {
namespace {

template <class... F>
struct Overload : F... {
  using F::operator()...;
};
template <class... F>
Overload(F...) -> Overload<F...>;

}  // namespace

const std::vector<ClusterStateField>& ClusterStateFields() {
  using S = ClusterState;
  static const std::vector<ClusterStateField> kFields = {
      {"name", "DSLAUNCH_CLUSTER", &S::name},
      {"nodes", "", &S::nodes},
      {"first_node", "", &S::first_node},
      {"remote_nodes", "", &S::remote_nodes},
      {"joined", "", &S::joined},
      {"slots", "", &S::slots},
      {"gpus", "", &S::gpus},
      {"base_image", "", &S::base_image},
      {"image", "DSLAUNCH_IMAGE", &S::image},
      {"network", "DSLAUNCH_NETWORK", &S::network},
      {"checkpoint_volume", "DSLAUNCH_CHECKPOINT_VOLUME", &S::checkpoint_volume},
      {"job_volume", "DSLAUNCH_JOB_VOLUME", &S::job_volume},
      {"workspace", "DSLAUNCH_WORKSPACE", &S::workspace},
      {"data", "DSLAUNCH_DATA", &S::data},
      {"shm_size", "DSLAUNCH_SHM_SIZE", &S::shm_size},
      {"created_swarm", "", &S::created_swarm},
      {"created_gwbridge", "", &S::created_gwbridge},
      {"created_network", "", &S::created_network},
      {"created_image", "", &S::created_image},
      {"created_volumes", "", &S::created_volumes},
  };
  return kFields;
}

std::string FieldText(const ClusterState& s, const ClusterStateField& f) {
  return std::visit(Overload{[&](std::string ClusterState::*m) { return s.*m; },
                             [&](int ClusterState::*m) { return std::to_string(s.*m); },
                             [&](bool ClusterState::*m) { return std::string(s.*m ? "true" : "false"); },
                             [&](std::vector<std::string> ClusterState::*m) {
                               std::string out;
                               for (const std::string& v : s.*m) out += (out.empty() ? "" : ",") + v;
                               return out;
                             }},
                    f.member);
}

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
    const auto& fields = ClusterStateFields();
    auto field = std::find_if(fields.begin(), fields.end(), [&](const ClusterStateField& f) { return f.key == key; });
    if (field == fields.end()) return bad("unknown key '" + key + "'");
    Status read = std::visit(
        Overload{[&](std::string ClusterState::*m) {
                   s.*m = value;
                   return Status::OK();
                 },
                 [&](bool ClusterState::*m) {
                   if (value != "true" && value != "false")
                     return bad(key + ": expected true or false, got '" + value + "'");
                   s.*m = value == "true";
                   return Status::OK();
                 },
                 [&](int ClusterState::*m) {
                   char* end = nullptr;
                   long n = std::strtol(value.c_str(), &end, 10);
                   if (value.empty() || *end != '\0' || n < 0 || n > 100000)
                     return bad(key + ": expected a count, got '" + value + "'");
                   s.*m = static_cast<int>(n);
                   return Status::OK();
                 },
                 [&](std::vector<std::string> ClusterState::*m) {
                   for (const std::string& v : Split(value, ','))
                     if (!v.empty()) (s.*m).push_back(v);
                   return Status::OK();
                 }},
        field->member);
    DS_RETURN_IF_ERROR(read);
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
  for (const ClusterStateField& f : ClusterStateFields()) put(f.key, FieldText(s, f));
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
