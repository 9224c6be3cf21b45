// CommandRunner: how `dslaunch cluster` runs docker, docker-compose, ssh-keygen
// and ldd. An interface so that the cluster logic (what is created, what is
// removed) is unit-tested against a fake that records the commands; the real
// one forks and execs with the arguments as given (no shell). Not
// thread-safe; one runner per command invocation.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace ds {

struct CommandResult {
  int exit_code = 0;  // 128+N when killed by signal N
  std::string out;    // stdout
  std::string err;    // stderr
};

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  // Runs argv (argv[0] looked up in PATH) with `input` on its stdin and
  // returns what it printed. An error only when it could not be started.
  virtual Result<CommandResult> Capture(const std::vector<std::string>& argv, const std::string& input = "") = 0;
  // Runs argv with this process's stdout and stderr (progress a person
  // watches, such as docker build's); returns its exit code.
  virtual Result<int> Passthrough(const std::vector<std::string>& argv) = 0;
};

std::unique_ptr<CommandRunner> MakeProcessRunner();

// "docker network create ... net" as a person would type it (for messages).
std::string CommandLine(const std::vector<std::string>& argv);

// Capture that must succeed: the command's stdout, or an error naming the
// command, its exit code and the end of its stderr:
// "docker network rm n (exit code 1): Error response from daemon: ...".
Result<std::string> CaptureOk(CommandRunner& runner, const std::vector<std::string>& argv,
                              const std::string& input = "");

}  // namespace ds
