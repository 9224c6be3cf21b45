// The descriptor rule of common/subprocess.h with real processes: a program
// started after CloseOnExecAboveStderr (fork + exec) or through
// AddCloseAboveStderr (posix_spawn) finds open only 0, 1, 2 and the
// descriptors kept on purpose, though the parent opened the others without
// O_CLOEXEC.
#include "common/subprocess.h"

#include <catch2/catch.hpp>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace ds {
namespace {

// A shell line printing "open N" for each of `fds` the shell holds.
std::string Probe(std::initializer_list<int> fds) {
  std::string s;
  for (int fd : fds) s += "[ -e /proc/$$/fd/" + std::to_string(fd) + " ] && echo open " + std::to_string(fd) + "; ";
  return s + "true";
}

// Reads `fd` to its end, then reaps `pid`.
std::string Drain(int fd, pid_t pid) {
  std::string out;
  char buf[256];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return out;
}

TEST_CASE("subprocess: after fork, only stdio and the kept descriptors survive exec", "[subprocess]") {
  const int leaked = ::open("/dev/null", O_RDONLY);  // inheritable, as Asio's sockets were
  const int kept = ::open("/dev/null", O_RDONLY | O_CLOEXEC);  // close-on-exec, passed on purpose anyway
  REQUIRE(leaked > 2);
  REQUIRE(kept > 2);
  int out[2];
  REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
  const std::string line = Probe({leaked, kept});
  const CStringArray argv({"/bin/sh", "-c", line});
  const pid_t pid = ForkWithSignalsBlocked();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(out[1], 1);
    CloseOnExecAboveStderr({kept});
    ResetSignalsInChild();
    ::execv(argv.data()[0], argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  CHECK(Drain(out[0], pid) == "open " + std::to_string(kept) + "\n");
  ::close(leaked);
  ::close(kept);
}

TEST_CASE("subprocess: posix_spawn with AddCloseAboveStderr passes only stdio", "[subprocess]") {
  const int leaked = ::open("/dev/null", O_RDONLY);
  REQUIRE(leaked > 2);
  int out[2];
  REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  REQUIRE(AddCloseAboveStderr(&fa) == 0);
  const CStringArray argv({"/bin/sh", "-c", Probe({leaked}) + "; echo done"});
  pid_t pid = -1;
  REQUIRE(::posix_spawn(&pid, "/bin/sh", &fa, nullptr, argv.data(), environ) == 0);
  posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  CHECK(Drain(out[0], pid) == "done\n");
  ::close(leaked);
}

}  // namespace
}  // namespace ds
