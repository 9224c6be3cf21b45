// agent/python_path: where the agent finds the dslaunch Python package beside
// itself (installed and build-tree layouts), and how it joins PYTHONPATH.
#include "agent/python_path.h"

#include <filesystem>

#include <catch2/catch.hpp>

#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"

namespace ds {
namespace {

TEST_CASE("python path: installed beside bin/, else the build tree's python/, else none", "[python]") {
  testing::TempDir t;
  const std::string root = t.path();
  std::filesystem::create_directories(root + "/bin");
  CHECK(DslaunchPythonDir(root + "/bin/dsagent") == "");
  std::filesystem::create_directories(root + "/python/dslaunch");
  testing::WriteFile(root + "/python/dslaunch/__init__.py", "");
  CHECK(DslaunchPythonDir(root + "/agent/dsagent") == root + "/python");  // build/agent/dsagent -> build/python
  std::filesystem::create_directories(root + "/lib/dslaunch/python/dslaunch");
  testing::WriteFile(root + "/lib/dslaunch/python/dslaunch/__init__.py", "");
  CHECK(DslaunchPythonDir(root + "/bin/dsagent") == root + "/lib/dslaunch/python");  // installed wins
}

TEST_CASE("python path: appended after the user's entries, never twice", "[python]") {
  CHECK(AppendPythonPath("", "/p") == "/p");
  CHECK(AppendPythonPath("/mine", "/p") == "/mine:/p");
  CHECK(AppendPythonPath("/a:/b", "/p") == "/a:/b:/p");
  CHECK(AppendPythonPath("/a:/p", "/p") == "/a:/p");
  CHECK(AppendPythonPath("/p:/a", "/p") == "/p:/a");
  CHECK(AppendPythonPath("/pp", "/p") == "/pp:/p");
  CHECK(AppendPythonPath("/mine", "") == "/mine");
}

}  // namespace
}  // namespace ds
