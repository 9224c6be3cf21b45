#include "tests/test_util/other_user.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "tests/test_util/files.h"

namespace ds::testing {
namespace fs = std::filesystem;

bool CanActAsNobody() { return ::geteuid() == 0; }

bool AsNobody(std::vector<std::string> argv) {
  argv.insert(argv.begin(), {"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"});
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  return pid > 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

bool WriteAsNobody(const std::string& path, const std::string& content) {
  return AsNobody({"sh", "-c", "printf %s \"$1\" > \"$2\"", "sh", content, path});
}

SharedDir::SharedDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string t = std::string(tmp && *tmp ? tmp : "/tmp") + "/dslaunch-attack-XXXXXX";
  base = ::mkdtemp(t.data()) ? t : "";
  ::chmod(base.c_str(), 0755);
  shared = base + "/shared";
  ::mkdir(shared.c_str(), 0777);
  ::chmod(shared.c_str(), 0777);  // not 1777, whatever the umask
}

SharedDir::~SharedDir() {
  std::error_code ec;
  if (!base.empty()) fs::remove_all(base, ec);
}

uid_t OwnerOf(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 ? st.st_uid : static_cast<uid_t>(-1);
}

std::map<std::string, std::string> TreeOf(const std::string& dir) {
  std::map<std::string, std::string> tree;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const std::string rel = fs::relative(it->path(), dir).string();
    if (it->is_symlink()) tree[rel] = "-> " + fs::read_symlink(it->path()).string();
    else if (it->is_directory()) tree[rel] = "<dir>";
    else tree[rel] = ReadFile(it->path().string());
  }
  return tree;
}

}  // namespace ds::testing
