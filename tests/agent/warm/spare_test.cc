// A warm spare (agent/warm/spare.h) against a real python3: what the
// script and its preload see must be what a cold worker would see.
#include "agent/warm/spare.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <string>

#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"
#include "tests/test_util/skip.h"

namespace ds {
namespace {


// What the (non-blocking) pipe `fd` carries until its writer closes it.
std::string ReadToEof(int fd) {
  std::string out;
  char buf[4096];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 1000) != 1) continue;
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) break;
    if (n > 0) out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// Starts a spare for `script` with `interpreter` and `env`, waits until it
// is ready, hands it `script` with `next_env` (the next generation's; `env`
// when empty), and returns its stdout (reaped).
std::string RunWarm(const std::vector<std::string>& interpreter, const std::string& script, const KeyValues& env,
                    const std::vector<std::string>& preload = {"json"}, const KeyValues& next_env = {}) {
  auto spare = WarmSpare::Start(SpareStart{interpreter, env, "", {}}, script, preload, /*low_priority=*/false);
  REQUIRE(spare.ok());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while ((*spare)->state() == SpareState::kImporting && std::chrono::steady_clock::now() < deadline) {
    pollfd p{(*spare)->report_fd(), POLLIN, 0};
    if (::poll(&p, 1, 1000) == 1) (*spare)->OnReadable();
  }
  REQUIRE((*spare)->state() == SpareState::kReady);
  WorkerLaunch launch;
  launch.env = next_env.empty() ? env : next_env;
  auto worker = (*spare)->HandOff(launch, {script});
  REQUIRE(worker.ok());
  const std::string out = ReadToEof((*worker)->stdout_fd()), err = ReadToEof((*worker)->stderr_fd());
  int status = 0;
  ::waitpid((*worker)->pid(), &status, 0);
  UNSCOPED_INFO("the warm worker's stderr: " << err);
  return out;
}

// The same script run cold: `interpreter script`, its stdout.
std::string RunCold(const std::vector<std::string>& interpreter, const std::string& script, const std::string& env) {
  std::string cmd = env + " ";
  for (const auto& a : interpreter) cmd += a + " ";
  FILE* f = ::popen((cmd + script).c_str(), "r");
  REQUIRE(f != nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
  ::pclose(f);
  return out;
}

// Issue 42 item 5: the shim set sys.path[0] to the script's directory even
// under -I or PYTHONSAFEPATH=1, replacing what was first there, so a module
// planted beside the script was imported warm where a cold worker gets
// ImportError.
TEST_CASE("warm spare: under python3 -I or PYTHONSAFEPATH the path is the interpreter's, a planted module is not "
          "imported",
          "[warm]") {
  if (::access("/usr/bin/python3", X_OK) != 0) DS_SKIP("/usr/bin/python3 is not installed");
  testing::TempDir dir("dsl-test-warm");
  testing::WriteFile(dir / "planted.py", "print('planted module imported')\n");
  testing::WriteFile(dir / "script.py",
                     "import sys\nprint(sys.path[0])\ntry:\n    import planted\nexcept ImportError:\n"
                     "    print('ImportError')\n");
  const KeyValues env = {{"PATH", "/usr/bin:/bin"}};
  const std::string isolated = RunWarm({"/usr/bin/python3", "-I"}, dir / "script.py", env);
  CHECK(isolated == RunCold({"/usr/bin/python3", "-I"}, dir / "script.py", "env -i PATH=/usr/bin:/bin"));
  CHECK(isolated.find("ImportError") != std::string::npos);
  const KeyValues safe = {{"PATH", "/usr/bin:/bin"}, {"PYTHONSAFEPATH", "1"}};
  const std::string safe_out = RunWarm({"/usr/bin/python3"}, dir / "script.py", safe);
  CHECK(safe_out == RunCold({"/usr/bin/python3"}, dir / "script.py", "env -i PATH=/usr/bin:/bin PYTHONSAFEPATH=1"));
  // Neither: the script's directory first, as python3 script.py puts it.
  CHECK(RunWarm({"/usr/bin/python3"}, dir / "script.py", env) == dir.path() + "\nplanted module imported\n");
}

// Issue 42 item 11: the preload was imported under the previous
// generation's environment (stale RANK, MASTER_PORT, DSLAUNCH_GENERATION;
// the old MASTER_PORT is free for anyone to bind). Now without them; the
// assignment brings this generation's.
TEST_CASE("warm spare: the preload is imported without the generation's variables, the script sees its own",
          "[warm]") {
  if (::access("/usr/bin/python3", X_OK) != 0) DS_SKIP("/usr/bin/python3 is not installed");
  testing::TempDir dir("dsl-test-warm");
  testing::WriteFile(dir / "probe_pre.py",
                     "import os\nSEEN = [os.environ.get(k, '-') for k in ('RANK', 'MASTER_PORT', "
                     "'DSLAUNCH_GENERATION', 'KEEP')]\n");
  testing::WriteFile(dir / "script.py",
                     "import os, probe_pre\nprint(probe_pre.SEEN)\nprint(os.environ['RANK'], os.environ['MASTER_PORT'])\n");
  const KeyValues env = {{"PATH", "/usr/bin:/bin"}, {"PYTHONPATH", dir.path()}, {"RANK", "1"},
                         {"MASTER_PORT", "29500"}, {"DSLAUNCH_GENERATION", "0"}, {"KEEP", "k"}};
  KeyValues next = env;
  for (auto& [k, v] : next)
    if (k == "MASTER_PORT") v = "29611";
  const std::string out = RunWarm({"/usr/bin/python3"}, dir / "script.py", env, {"probe_pre"}, next);
  CHECK(out == "['-', '-', '-', 'k']\n1 29611\n");
}

}  // namespace
}  // namespace ds
