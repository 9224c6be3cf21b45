// Multi-process test harness (Gloo test/multiproc_test.h style): forks
// `world` ranks, each connects a GlooCommunicator through a FileStore in a
// fresh temp directory and runs the body; the body's return value is the
// child's exit code. Children report data back through files in dir().
// Used from the parent thread only; cleans up its temp dir and children.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
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
    size_t left = pids_.size();
    for (auto [r, code] : reaped_) { codes[r] = code; --left; }
    reaped_.clear();
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (left > 0) {
      for (size_t i = 0; i < pids_.size(); ++i) {
        if (codes[i] != -1) continue;
        int st = 0;
        pid_t got = waitpid(pids_[i], &st, WNOHANG);
        if (got == pids_[i]) {
          codes[i] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
          --left;
        }
      }
      if (left == 0) break;
      if (std::chrono::steady_clock::now() > deadline) {
        for (size_t i = 0; i < pids_.size(); ++i)
          if (codes[i] == -1) kill(pids_[i], SIGKILL);
      }
      usleep(2000);
    }
    pids_.clear();
    return codes;
  }

  // Waits for rank r alone (up to limit); its exit code, or -1 if still running.
  int WaitRank(int r, std::chrono::milliseconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      int st = 0;
      if (waitpid(pids_[r], &st, WNOHANG) == pids_[r]) {
        const int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        reaped_[r] = code;
        return code;
      }
      usleep(2000);
    }
    return -1;
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
  std::string dir_;
  GlooOptions options_;
  std::function<void(int, GlooOptions&)> rank_options_;
  std::vector<pid_t> pids_;
  std::map<int, int> reaped_;  // rank -> exit code, collected by WaitRank
  int runs_ = 0;
};

}  // namespace ds::rt::testing
