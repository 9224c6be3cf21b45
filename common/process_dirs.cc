#include "common/process_dirs.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "common/log.h"

namespace ds {
namespace {

void RemoveDeadProcessesDirs(const std::string& base, const std::string& prefix) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(base, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    char* end = nullptr;
    long pid = std::strtol(name.c_str() + prefix.size(), &end, 10);
    if (pid <= 0 || *end != '.' || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to know
    struct stat st {};
    if (::lstat(entry.path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) continue;
    std::error_code rm;
    std::filesystem::remove_all(entry.path(), rm);
    DS_LOG(Debug, Proc) << "removed " << entry.path().string() << ", left by process " << pid
                        << (rm ? ": failed: " + rm.message() : "");
  }
}

}  // namespace

Result<std::string> MakeProcessDir(const std::string& base, const std::string& prefix) {
  RemoveDeadProcessesDirs(base, prefix);
  std::string tmpl = fmt::format("{}/{}{}.XXXXXX", base, prefix, ::getpid());
  if (::mkdtemp(tmpl.data()) == nullptr)  // mode 0700
    return Status::IOError(fmt::format("cannot create a directory like {}: {}", tmpl, std::strerror(errno)));
  return tmpl;
}

}  // namespace ds
