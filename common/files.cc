#include "common/files.h"

#include <sys/stat.h>

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
