// DslaunchPythonDir and AppendPythonPath (python_path.h).
#include "agent/python_path.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace ds {

std::string DslaunchPythonDir(const std::string& exe) {
  namespace fs = std::filesystem;
  const fs::path bin = fs::path(exe).parent_path();
  // Lexically: /proc/self/exe is resolved already, and "dir/.." is dir's parent.
  for (const fs::path candidate : {(bin / ".." / "lib" / "dslaunch" / "python").lexically_normal(),
                                   (bin / ".." / "python").lexically_normal()}) {
    std::error_code ec;
    if (fs::is_regular_file(candidate / "dslaunch" / "__init__.py", ec)) return candidate.string();
  }
  return "";
}

const std::string& OwnDslaunchPythonDir() {
  static const std::string dir = [] {
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::string() : DslaunchPythonDir(self.string());
  }();
  return dir;
}

std::string AppendPythonPath(const std::string& pythonpath, const std::string& dir) {
  if (dir.empty()) return pythonpath;
  if (pythonpath.empty()) return dir;
  size_t start = 0;
  while (start <= pythonpath.size()) {
    const size_t end = std::min(pythonpath.find(':', start), pythonpath.size());
    if (pythonpath.compare(start, end - start, dir) == 0 && end - start == dir.size()) return pythonpath;
    start = end + 1;
  }
  return pythonpath + ":" + dir;
}

}  // namespace ds
