// Multi-process test harness (Gloo test/multiproc_test.h style): forks
// `world` ranks, each connects a GlooCommunicator through a FileStore in a
// fresh temp directory and runs the body; the body's return value is the
// child's exit code. Children report data back through files in dir().
// Used from the parent thread only; cleans up its temp dir and children.
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>

#include "runtime/comm/gloo_communicator.h"

namespace ds::rt::testing {

class MultiProc {
 public:
  MultiProc() {
    char tmpl[] = "/tmp/dstrain-mp-XXXXXX";
    dir_ = mkdtemp(tmpl);
    std::filesystem::create_directories(dir_ + "/store");
  }
  ~MultiProc() {
    for (size_t i = 0; i < pids_.size(); ++i) {
      if (reaped_.count(int(i))) continue;
      kill(pids_[i], SIGKILL);
      waitpid(pids_[i], nullptr, 0);
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::string& dir() const { return dir_; }
  // What the ranks connect with (the timeout is Start's argument), and an
  // optional change per rank.
  GlooOptions& options() { return options_; }
  void set_rank_options(std::function<void(int rank, GlooOptions&)> fn) { rank_options_ = std::move(fn); }

  // Starts `world` ranks running body(comm). Each run uses its own store
  // prefix so one MultiProc can run several jobs in turn.
  void Start(int world, const std::function<int(Communicator&)>& body,
             std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    const std::string prefix = "run" + std::to_string(runs_++);
    std::fflush(nullptr);
    for (int r = 0; r < world; ++r) {
      pid_t pid = fork();
      if (pid == 0) {
        int code = 100;
        try {
          gloo::rendezvous::FileStore fs(dir_ + "/store");
          gloo::rendezvous::PrefixStore store(prefix, fs);
          GlooOptions opts = options_;
          opts.timeout = timeout;
          if (rank_options_) rank_options_(r, opts);
          auto comm = GlooCommunicator::Connect(store, r, world, opts);
          code = body(*comm);
          if (code == 0) comm->Barrier();  // no rank closes while others still connect
        } catch (const CommError& e) {
          std::fprintf(stderr, "rank %d: CommError: %s\n", r, e.what());
          code = 42;
        } catch (const std::exception& e) {
          std::fprintf(stderr, "rank %d: exception: %s\n", r, e.what());
          code = 101;
        }
        std::fflush(nullptr);
        _exit(code);
      }
      pids_.push_back(pid);
    }
  }

  // Waits for all ranks; returns each one's exit code (128 + signal when
  // killed). Ranks still alive after `limit` are SIGKILLed (code 128+9).
  std::vector<int> Wait(std::chrono::milliseconds limit = std::chrono::seconds(120)) {
    std::vector<int> codes(pids_.size(), -1);
    for (auto [r, code] : reaped_) codes[r] = code;
    reaped_.clear();
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (size_t i = 0; i < pids_.size(); ++i) {
      if (codes[i] != -1) continue;
      codes[i] = WaitExit(pids_[i], deadline);
      if (codes[i] != -1) continue;
      kill(pids_[i], SIGKILL);
      int st = 0;
      waitpid(pids_[i], &st, 0);  // SIGKILL: it exits now
      codes[i] = ExitCode(st);
    }
    pids_.clear();
    return codes;
  }

  // Waits for rank r alone (up to limit); its exit code, or -1 if still running.
  int WaitRank(int r, std::chrono::milliseconds limit) {
    const int code = WaitExit(pids_[r], std::chrono::steady_clock::now() + limit);
    if (code != -1) reaped_[r] = code;
    return code;
  }
  void Kill(int r) { kill(pids_[r], SIGKILL); }

  // Runs and waits; true when every rank exited 0.
  std::vector<int> Run(int world, const std::function<int(Communicator&)>& body) {
    Start(world, body);
    return Wait();
  }

  void WriteFloats(const std::string& name, const std::vector<float>& v) const {
    std::ofstream out(dir_ + "/" + name, std::ios::binary);
    out.write(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
  }
  std::vector<float> ReadFloats(const std::string& name) const {
    std::ifstream in(dir_ + "/" + name, std::ios::binary | std::ios::ate);
    if (!in) return {};
    std::vector<float> v(static_cast<size_t>(in.tellg()) / sizeof(float));
    in.seekg(0);
    in.read(reinterpret_cast<char*>(v.data()), v.size() * sizeof(float));
    return v;
  }

 private:
  static int ExitCode(int st) { return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st); }

  // Reaps child `pid` once it exits, woken by the exit itself (its pidfd
  // turns readable), giving up at `deadline`: the exit code, or -1 when it
  // still runs. Without pidfds (Linux < 5.3) it waits with no deadline.
  static int WaitExit(pid_t pid, std::chrono::steady_clock::time_point deadline) {
    const int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    if (fd >= 0) {
      pollfd p{fd, POLLIN, 0};
      for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now()).count();
        const int ms = static_cast<int>(std::clamp<int64_t>(left, 0, INT_MAX));
        if (poll(&p, 1, ms) >= 0 || errno != EINTR) break;
      }
      close(fd);
    }
    int st = 0;
    if (waitpid(pid, &st, fd >= 0 ? WNOHANG : 0) != pid) return -1;
    return ExitCode(st);
  }

  std::string dir_;
  GlooOptions options_;
  std::function<void(int, GlooOptions&)> rank_options_;
  std::vector<pid_t> pids_;
  std::map<int, int> reaped_;  // rank -> exit code, collected by WaitRank
  int runs_ = 0;
};

}  // namespace ds::rt::testing
