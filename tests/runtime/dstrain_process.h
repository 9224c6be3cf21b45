// Runs the dstrain binary as a child process for the tests that treat it as
// a black box: its environment added, stdout and stderr into one file. The
// binary is DSTRAIN_PATH (set by CMake), or $DSTRAIN_BIN when set (the
// gpu-bundle's wrapper on a machine without our libraries).
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace ds::rt::testing {

struct Proc {
  pid_t pid = -1;
  std::string out_path;
};

// Starts dstrain with `env` added; stdout+stderr go to a file.
inline Proc Start(const std::vector<std::string>& env, const std::vector<std::string>& args,
                  const std::string& out_path) {
  std::fflush(nullptr);
  Proc p;
  p.out_path = out_path;
  p.pid = fork();
  if (p.pid == 0) {
    FILE* f = std::fopen(out_path.c_str(), "w");
    dup2(fileno(f), 1);
    dup2(fileno(f), 2);
    for (const auto& e : env) putenv(const_cast<char*>(e.c_str()));
    const char* bin = std::getenv("DSTRAIN_BIN") != nullptr ? std::getenv("DSTRAIN_BIN") : DSTRAIN_PATH;
    std::vector<char*> argv = {const_cast<char*>(bin)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(bin, argv.data());
    _exit(127);
  }
  return p;
}

inline int Wait(const Proc& p) {
  int st = 0;
  waitpid(p.pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

inline std::string Read(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace ds::rt::testing
