#include "launcher/cluster/image_context.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "common/env_registry.h"
#include "common/files.h"
#include "common/strings.h"

namespace fs = std::filesystem;

namespace ds {
namespace {

// glibc's own libraries: the base image's must be used, never ours.
const std::set<std::string> kGlibc = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2",
                                      "librt.so.1", "libresolv.so.2", "libutil.so.1", "libanl.so.1"};

bool FromCudaOrDriver(const std::string& name, const std::string& path) {
  for (const char* prefix : {"libcuda", "libnvidia", "libnccl", "libcublas", "libcudart", "libnvrtc", "libcurand"}) {
    if (name.rfind(prefix, 0) == 0) return true;
  }
  return path.rfind("/usr/local/cuda", 0) == 0;
}

Status CopyInto(const std::string& from, const std::string& dir, fs::perms perms) {
  std::error_code ec;
  fs::path to = fs::path(dir) / fs::path(from).filename();
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);  // follows symlinks: the real bytes
  if (!ec) fs::permissions(to, perms, ec);
  if (ec) return Status::IOError("cannot copy " + from + " to " + dir + ": " + ec.message());
  return Status::OK();
}

}  // namespace

std::vector<std::string> LibrariesToBundle(const std::string& ldd_output) {
  std::vector<std::string> out;
  for (const std::string& raw : Split(ldd_output, '\n')) {
    std::string line(Trim(raw));
    size_t arrow = line.find(" => ");
    if (arrow == std::string::npos) continue;  // the vdso and the loader have no "=>"
    std::string name = line.substr(0, arrow);
    std::string path = line.substr(arrow + 4);
    if (size_t paren = path.find(" ("); paren != std::string::npos) path.resize(paren);
    if (path.empty() || path[0] != '/') continue;  // "not found": ldd's own error says which
    if (kGlibc.count(name) || name.rfind("ld-linux", 0) == 0 || FromCudaOrDriver(name, path)) continue;
    if (std::find(out.begin(), out.end(), path) == out.end()) out.push_back(path);
  }
  return out;
}

Result<std::string> DockerFilesDir() {
  std::string dir = EnvString("DSLAUNCH_DOCKER_DIR");
  if (dir.empty()) {
    // Installed: <prefix>/share/dslaunch/docker beside <prefix>/bin/dslaunch;
    // else the source tree this dslaunch was built from.
    std::error_code ec;
    const fs::path installed = fs::read_symlink("/proc/self/exe", ec).parent_path() / "../share/dslaunch/docker";
    dir = !ec && fs::exists(installed / "Dockerfile", ec) ? installed.lexically_normal().string()
                                                           : std::string(DSLAUNCH_SOURCE_DOCKER_DIR);
  }
  if (fs::exists(fs::path(dir) / "Dockerfile")) return dir;
  return Status::NotFound("no Dockerfile in " + dir + "; set DSLAUNCH_DOCKER_DIR to the repository's docker/ folder");
}

Result<std::vector<std::string>> ClusterBinaries() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return Status::IOError("cannot find dslaunch's own path (/proc/self/exe): " + ec.message());
  std::vector<std::string> out = {self.string(), SiblingBinary("dsagent", "agent"), SiblingBinary("dstrain", "runtime")};
  for (const std::string& path : out) {
    if (!fs::exists(path)) {
      return Status::NotFound(path + " is missing: the image carries dslaunch, dsagent and dstrain from the "
                              "folder dslaunch runs from (build all three)");
    }
  }
  return out;
}

Status MakeImageContext(CommandRunner& runner, const std::string& docker_dir, const std::vector<std::string>& binaries,
                        const std::string& context_dir) {
  std::error_code ec;
  fs::remove_all(context_dir, ec);
  const std::string bin = context_dir + "/dslaunch/bin", lib = context_dir + "/dslaunch/lib";
  fs::create_directories(bin, ec);
  if (!ec) fs::create_directories(lib, ec);
  if (ec) return Status::IOError("cannot create " + context_dir + ": " + ec.message());
  const fs::perms exec = fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                         fs::perms::others_read | fs::perms::others_exec;
  const fs::perms data = fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read;
  for (const char* f : {"Dockerfile", "entrypoint.sh", "sshd_config"}) {
    DS_RETURN_IF_ERROR(CopyInto(docker_dir + "/" + f, context_dir, std::string(f) == "entrypoint.sh" ? exec : data));
  }
  std::set<std::string> libs;
  for (const std::string& b : binaries) {
    DS_RETURN_IF_ERROR(CopyInto(b, bin, exec));
    DS_ASSIGN_OR_RETURN(std::string ldd, CaptureOk(runner, {"ldd", b}));
    if (ldd.find("not found") != std::string::npos) {
      return Status::NotFound("ldd " + b + ": a library it needs is not found on this machine:\n" + ldd);
    }
    for (const std::string& path : LibrariesToBundle(ldd)) libs.insert(path);
  }
  // dstrain's GPU plugin, where it was built: dstrain loads it only where a
  // GPU may be used, so a CPU base image carries it unused and a CUDA base
  // (with the NVIDIA container toolkit) trains on the GPU.
  // Beside dstrain in a build tree, in <prefix>/lib/dslaunch/ when installed.
  for (const std::string& b : binaries) {
    fs::path plugin = fs::path(b).parent_path() / "libdstrain_cuda.so";
    if (!fs::exists(plugin)) plugin = fs::path(b).parent_path() / "../lib/dslaunch/libdstrain_cuda.so";
    if (fs::path(b).filename() != "dstrain" || !fs::exists(plugin)) continue;
    DS_RETURN_IF_ERROR(CopyInto(plugin.string(), lib, data));
    DS_ASSIGN_OR_RETURN(std::string ldd, CaptureOk(runner, {"ldd", plugin.string()}));
    for (const std::string& path : LibrariesToBundle(ldd)) libs.insert(path);
  }
  for (const std::string& path : libs) DS_RETURN_IF_ERROR(CopyInto(path, lib, data));
  return Status::OK();
}

}  // namespace ds
