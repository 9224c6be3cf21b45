// SimWorkers: the fake WorkerLauncher (agent/control/seams.h) behind each of
// dssim's real AgentControls. "Starting" a worker forks nothing: it keeps
// the worker's rank, WORLD_SIZE and store address (from the Assign's
// environment) for the scenario's store step, and hands out a pid. A
// signal ends the worker a moment later (posted to the io thread, never
// inside the AgentControl's call), as a real worker dies on SIGTERM; the
// scenario ends the rest (Finish: exit 0) and makes them beat (Beat: the
// next step, the long beat when it gives a compute time). Each end goes to `on_exit`, given at construction. Holding
// MASTER_PORT holds nothing. Not thread-safe: the io thread only.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "agent/control/seams.h"
#include "common/asio.h"
#include "wire/step_heartbeat.h"

namespace ds::sim {

class SimWorkers final : public WorkerLauncher {
 public:
  using ExitFn = std::function<void(const WorkerExit&)>;
  using StartedFn = std::function<void(const msg::Assign&, bool again)>;
  using BeatFn = std::function<void(const StepBeat& beat)>;

  // on_started: an Assign's workers "started" (`again`: a second Assign of
  // the same generation); on_exit: one of them ended; on_beat: one beat.
  SimWorkers(asio::io_context& io, StartedFn on_started, ExitFn on_exit, BeatFn on_beat)
      : io_(io), on_started_(std::move(on_started)), on_exit_(std::move(on_exit)), on_beat_(std::move(on_beat)) {}

  Result<uint32_t> HoldPort(uint32_t port) override { return port == 0 ? 29500u : port; }
  void ReleasePort() override {}
  std::vector<WorkerStart> StartWorkers(const msg::Assign& m, const std::vector<std::string>& beat_tokens,
                                        const std::string& snapshot_dir) override;
  void SignalGroup(int rank, int sig) override;
  int KillLeftovers() override { return 0; }

  // Every running worker of generation `gen` exits 0.
  void Finish(int gen);
  // `rank` (of the current generation, running) reports its next step, with
  // `compute_micros` of compute and `samples` (-1: the short beat).
  void Beat(int rank, int64_t compute_micros = -1, int64_t samples = -1);

  int generation() const { return generation_; }
  const std::set<int>& running() const { return running_; }
  const std::vector<int>& ranks() const { return ranks_; }
  int world() const { return world_; }
  const std::string& store_token() const { return store_token_; }
  const asio::ip::tcp::endpoint& store() const { return store_; }

 private:
  void End(int gen, int rank, int code, int sig);

  asio::io_context& io_;
  StartedFn on_started_;
  ExitFn on_exit_;
  BeatFn on_beat_;
  int generation_ = -1;
  std::vector<int> ranks_;
  std::vector<std::string> tokens_;
  std::vector<int64_t> steps_;  // by index of ranks_: the last step beaten
  std::set<int> running_;
  int world_ = -1;
  std::string store_token_;
  asio::ip::tcp::endpoint store_;
};

}  // namespace ds::sim
