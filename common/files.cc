#include "common/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ds {

Result<std::string> ReadTextFile(const std::string& path, const std::string& what) {
  const std::string name = what + " " + path;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    std::string reason = std::strerror(errno);
    return errno == ENOENT ? Status::NotFound(name + ": " + reason) : Status::IOError(name + ": " + reason);
  }
  if (S_ISDIR(st.st_mode)) return Status::InvalidArgument(name + ": is a directory");
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::IOError(name + ": cannot open: " + std::strerror(errno));
  std::ostringstream text;
  text << f.rdbuf();
  if (f.bad()) return Status::IOError(name + ": read error");
  return text.str();
}

Status WriteFileAtomically(const std::string& path, const std::string& text, unsigned mode) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) return Status::IOError("cannot write " + tmp + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return Status::IOError("cannot write " + tmp + ": " + why);
    }
    done += static_cast<size_t>(n);
  }
  ::fchmod(fd, mode);  // open's mode is filtered by the umask
  bool ok = ::fsync(fd) == 0;
  ok = ::close(fd) == 0 && ok;
  ok = ok && ::rename(tmp.c_str(), path.c_str()) == 0;
  if (ok) return Status::OK();
  std::string why = std::strerror(errno);
  ::unlink(tmp.c_str());
  return Status::IOError("cannot write " + path + ": " + why);
}

std::string SiblingBinary(const std::string& name, const std::string& subdir, const std::string& override_path) {
  if (!override_path.empty()) return override_path;
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return name;
  std::filesystem::path dir = self.parent_path();
  if (std::filesystem::exists(dir / name)) return (dir / name).string();
  std::filesystem::path tree = dir.parent_path() / subdir / name;
  if (std::filesystem::exists(tree)) return tree.string();
  return (dir / name).string();
}

}  // namespace ds
