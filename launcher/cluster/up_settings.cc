#include "launcher/cluster/up_settings.h"

#include <filesystem>

#include "launcher/cluster/cluster_state.h"
#include "launcher/cluster/docker_cli.h"

namespace fs = std::filesystem;

namespace ds {
namespace {

constexpr const char* kBaseImage = "dslaunch-base:bookworm";  // scripts/make-base-image
constexpr const char* kHubBaseImage = "debian:bookworm";

// Whether mounting `p` at its own path would hide what a container needs:
// any system folder for the workspace (read-write), and for the read-only
// data folder "/", a top-level folder itself, or what is under /proc, /sys,
// /dev, /etc, /run (so /usr/share/datasets is fine as data).
bool HidesSystem(const fs::path& p, bool read_only) {
  // dslaunch itself is installed in the image at /opt/dslaunch: neither it nor a folder above it.
  if (p == "/" || p == "/opt" || p == "/opt/dslaunch" || p.string().rfind("/opt/dslaunch/", 0) == 0) return true;
  const std::string top = *std::next(p.begin());  // the first component after "/"
  const bool top_only = std::next(std::next(p.begin())) == p.end();
  for (const char* sys : {"proc", "sys", "dev", "etc", "run"}) {
    if (top == sys) return true;
  }
  for (const char* sys : {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "boot", "var"}) {
    if (top == sys && (!read_only || top_only)) return true;
  }
  return false;
}

Result<std::string> MountableFolder(const std::string& path, const std::string& what, bool read_only) {
  std::error_code ec;
  fs::path abs = fs::weakly_canonical(fs::absolute(path), ec);
  if (ec || !fs::is_directory(abs)) return Status::InvalidArgument(what + " '" + path + "': not a folder");
  if (abs.string().find_first_of(":$\n\"'") != std::string::npos) {
    return Status::InvalidArgument(what + " '" + abs.string() + "': compose cannot mount a path with ':', '$', "
                                   "a quote or a newline; pick or link one without");
  }
  if (HidesSystem(abs, read_only)) {
    return Status::InvalidArgument(what + " '" + abs.string() +
                                   "': a system folder cannot be mounted into the containers at its own path; "
                                   "pick a project folder");
  }
  return abs.string();
}

}  // namespace

Status ApplyUpOptions(const ClusterUpOptions& o, CommandRunner& runner, const ClusterPaths& paths, bool existing,
                    ClusterState* s) {
  s->name = o.name;
  if (o.nodes > 0) s->nodes = o.nodes;
  if (s->nodes <= 0) s->nodes = 2;
  if (s->nodes > 1000) return Status::InvalidArgument("--nodes " + std::to_string(s->nodes) + ": at most 1000 per host");
  s->joined = s->joined || o.join;
  if (o.first_node > 0) s->first_node = o.first_node;
  if (o.remote_nodes >= 0) s->remote_nodes = o.remote_nodes;
  if (s->joined && s->first_node < 2) {
    return Status::InvalidArgument("--join needs --first-node K: the number of this host's first node, after "
                                   "the manager's and other hosts' nodes (the manager's up printed it)");
  }
  if (s->joined && s->remote_nodes > 0) return Status::InvalidArgument("--remote-nodes is for the manager's up, not --join");
  if (!s->joined && s->first_node != 1) return Status::InvalidArgument("--first-node is for --join: the manager's nodes start at 1");
  if (o.gpus) s->gpus = true;
  if (o.slots > 0) s->slots = o.slots;
  if (!existing && o.slots <= 0) s->slots = 1;
  if (!o.shm_size.empty()) {
    DS_RETURN_IF_ERROR(CheckShmSize(o.shm_size));
    s->shm_size = o.shm_size;
  }
  // The folders pass the same checks whether given now or read back from the state file.
  std::error_code ec;
  const std::string ws = !o.workspace.empty() ? o.workspace : !s->workspace.empty() ? s->workspace
                                                                                     : fs::current_path(ec).string();
  DS_ASSIGN_OR_RETURN(s->workspace, MountableFolder(ws, "workspace", false));
  if (!o.data.empty()) {
    DS_ASSIGN_OR_RETURN(s->data, MountableFolder(o.data, "--data", true));
  } else if (s->data.empty()) {
    s->data = fs::is_directory("/usr/share/datasets") ? "/usr/share/datasets" : paths.empty;
  } else if (s->data != paths.empty) {
    DS_ASSIGN_OR_RETURN(s->data, MountableFolder(s->data, "data", true));
  }
  if (!o.base_image.empty()) {
    s->base_image = o.base_image;
  } else if (s->base_image.empty() && !s->gpus) {
    DS_ASSIGN_OR_RETURN(bool local, DockerHas(runner, "image", kBaseImage));
    s->base_image = local ? kBaseImage : kHubBaseImage;
  }
  s->image = "dslaunch-cluster-" + s->name + ":latest";
  s->network = s->name + "-net";
  s->job_volume = s->name + "-job";
  if (!o.checkpoint_volume.empty()) s->checkpoint_volume = o.checkpoint_volume;
  if (s->checkpoint_volume.empty()) s->checkpoint_volume = s->name + "-checkpoints";
  return Status::OK();
}

}  // namespace ds
