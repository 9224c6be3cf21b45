#include "agent/workers/error_file_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "common/env_registry.h"
#include "common/log.h"
#include "common/process_dirs.h"
#include "wire/client_conn.h"

namespace ds {

ErrorFileDir::~ErrorFileDir() {
  if (dir_.empty()) return;
  std::error_code ec;  // remove_all does not follow symlinks out of the directory
  std::filesystem::remove_all(dir_, ec);
  if (ec) DS_LOG(Warn, Proc) << "cannot remove " << dir_ << ": " << ec.message();
}

Result<std::string> ErrorFileDir::Prepare(uint32_t generation, int rank) {
  if (dir_.empty()) {
    auto env = GetAnyEnv("TMPDIR");
    const std::string base = env && !env->empty() ? *env : std::string("/tmp");
    DS_ASSIGN_OR_RETURN(dir_, MakeProcessDir(base, "dsagent-errors."));
  }
  std::string path = fmt::format("{}/error-g{}-r{}.json", dir_, generation, rank);
  std::error_code ec;
  std::filesystem::remove_all(path, ec);  // a stale file (or whatever a worker left in its place)
  if (ec) return Status::IOError(fmt::format("cannot remove the stale {}: {}", path, ec.message()));
  return path;
}

std::optional<TorchError> ReadWorkerErrorFile(const std::string& path, uid_t uid) {
  auto refuse = [&](const std::string& why) -> std::optional<TorchError> {
    DS_LOG(Debug, Proc) << "error file " << path << " ignored: " << why;
    return std::nullopt;
  };
  // O_NONBLOCK: a FIFO in its place must not hold the agent.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) {
    if (errno == ENOENT) return std::nullopt;  // the worker wrote none: the usual case
    return refuse(errno == ELOOP ? "a symbolic link" : std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return refuse(std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return refuse("not a regular file");
  if (st.st_uid != uid) return refuse(fmt::format("owned by uid {}, not {}", st.st_uid, uid));
  if (static_cast<uint64_t>(st.st_size) > kMaxErrorFileBytes)
    return refuse(fmt::format("{} bytes, more than {}", st.st_size, kMaxErrorFileBytes));
  std::string text;
  char buf[16384];
  while (text.size() <= kMaxErrorFileBytes) {
    ssize_t r = ::read(fd.get(), buf, sizeof(buf));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return refuse(std::strerror(errno));
    if (r == 0) break;
    text.append(buf, static_cast<size_t>(r));
  }
  if (text.size() > kMaxErrorFileBytes) return refuse("grew past the size limit while read");
  auto e = ParseTorchErrorFile(text);
  if (!e) return refuse("not PyTorch's error format");
  return e;
}

}  // namespace ds
