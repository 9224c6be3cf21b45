#include "runtime/reshape/worker_reshape.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "common/dstrain_exit.h"
#include "common/log.h"
#include "common/training_thread.h"
#include "runtime/engine/device_failure.h"

namespace ds::rt {
namespace {

using Clock = std::chrono::steady_clock;

int64_t MillisSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

// The q-quantile of `v` (nearest rank); 0 for none.
double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

// Rank 0's results.
void PrintResults(const TrainResult& result, const TrainerRuntime& rt) {
  std::printf("train throughput: %.1f samples/s\n", result.samples_per_sec);
  if (result.steady_steps > 0)  // bench/gpu/gpu_bench reads this line
    std::printf("train steady state: %.6f ms/step over %lld steps after %lld warm-up steps\n",
                1e3 * result.steady_seconds / static_cast<double>(result.steady_steps),
                static_cast<long long>(result.steady_steps), static_cast<long long>(kSteadyWarmupSteps));
  std::printf("test accuracy: %.4f\n", result.test_accuracy);
  if (result.saves > 0)
    std::printf("%s: %lld, training stood still %.2f ms each (median %.2f, p90 %.2f; %.1f samples/s counting them)\n",
                rt.snapshot_dir.empty() ? "checkpoints" : "snapshots handed to the agent",
                static_cast<long long>(result.saves), 1e3 * result.save_seconds / static_cast<double>(result.saves),
                Quantile(result.save_ms, 0.5), Quantile(result.save_ms, 0.9), result.samples_per_sec_with_saves);
  std::fflush(stdout);
}

// How a generation ended: an exit code, or interrupted (a collective failed,
// or a reshape was asked for) with why.
struct GenerationEnd {
  std::optional<int> exit_code;
  std::string why;
};

// One generation, shared by its thread and the main thread (which reads
// `reshape` and `end` only once the thread is done).
struct Generation {
  Membership m;
  TrainerConfig config;                    // its own: a thread left behind still reads it
  TrainerRuntime rt;
  RendezvousStore store;                   // its own: a thread left behind may still wait in it
  std::optional<ReshapeRequest> reshape;   // the reshape it carries out, until timed
  bool answered = false;                   // WorkerReshaped sent for it
  int64_t started_ms = -1, connected_ms = -1, resumed_ms = -1;  // since the request: where the time went
  std::atomic<bool> stop{false};           // its trainer stops at its next step
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  GenerationEnd end;
};

// Tells the agent how the reshape `r` ended.
void Answer(Worker& w, const ReshapeRequest& r, bool ok, const std::string& why) {
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - r.received).count();
  Status st = w.control->Answer(msg::WorkerReshaped{r.reshape.generation, static_cast<uint8_t>(ok ? 1 : 0), why,
                                                    static_cast<uint32_t>(std::min<int64_t>(micros, UINT32_MAX))});
  if (!st.ok()) DS_LOG(Warn, Comm) << st.message();
}

// The same for the reshape `g` carries out, once.
void AnswerReshape(Worker& w, Generation& g, bool ok, const std::string& why) {
  if (!g.reshape || g.answered) return;
  Answer(w, *g.reshape, ok, why);
  g.answered = true;
}

// After the reshape's first step: how long training stood still.
void ReportTrainingAgain(Generation& g, int64_t step) {
  if (!g.reshape) return;
  const int64_t ms = MillisSince(g.reshape->received);
  if (g.m.rank == 0)
    std::printf("dstrain: reshaped in place to %d ranks (generation %u) from step %lld: training again %lld ms after "
                "the request (old generation ended by %lld ms, new communicators by %lld, save loaded and agreed by "
                "%lld)\n", g.m.world, g.m.generation, static_cast<long long>(g.reshape->reshape.step),
                static_cast<long long>(ms), static_cast<long long>(g.started_ms),
                static_cast<long long>(g.connected_ms), static_cast<long long>(g.resumed_ms));
  std::fflush(stdout);
  DS_LOG(Info, Train) << "step " << step << " trained " << ms << " ms after the reshape request";
  g.reshape.reset();
}

// The generation's thread: connect its ranks, build a trainer over the data
// held, resume (the reshape's save, or what the environment says) and train
// to the end. Nothing escapes it.
GenerationEnd RunGeneration(Worker& w, Generation& g) {
  auto since_request = [&] { return g.reshape ? MillisSince(g.reshape->received) : -1; };
  g.started_ms = since_request();
  try {
    auto comms = GenerationComms::Connect(g.store.store, g.m, w.comms, w.control.get());
    g.connected_ms = since_request();
    Communicator& comm = comms->training();
    TrainerRuntime& rt = g.rt;
    rt.snapshot_comm = comms->snapshots();
    if (w.device.cuda) {
      bool hybrid = false;
      rt.make_engine = w.plugin->Engines(comm, g.config.tf32, &hybrid);
      if (hybrid && g.m.world > 1) rt.device += ", hybrid: gloo through host memory";
    }
    rt.interrupt = &g.stop;
    rt.on_resumed = [&] {
      g.resumed_ms = since_request();
      AnswerReshape(w, g, true, "");
    };
    rt.on_first_step = [&](int64_t step) { ReportTrainingAgain(g, step); };
    auto trainer = Trainer::Create(g.config, comm, rt, w.data);
    Result<TrainResult> result = trainer.ok() ? (*trainer)->Run() : Result<TrainResult>(trainer.status());
    trainer = Status::Aborted("done");  // the trainer goes before its communicators
    if (!result.ok() && (g.stop || (w.control && w.control->requested())))  // the abort's doing
      return {std::nullopt, result.status().message()};
    if (!result.ok()) {
      AnswerReshape(w, g, false, result.status().message());
      return {Fail(kDstrainExitConfig, result.status().message()), ""};
    }
    if (comm.rank() == 0) PrintResults(*result, rt);
    try {
      comm.Barrier();  // nobody tears down its connections while others still use them
    } catch (const CommError& e) {
      // Training and checkpoints are complete; a peer leaving early is not a failure.
      DS_LOG(Warn, Comm) << "final barrier: " << e.what();
    }
    return {0, ""};
  } catch (const CommError& e) {
    return {std::nullopt, e.what()};
  } catch (const DeviceFailure& e) {
    return {Fail(kDstrainExitDevice, std::string("GPU failure: ") + e.what()), ""};
  }
}

// Waits for `g`'s thread: until it ends, or until a reshape is asked for and
// then at most kAbortGrace. False when it was left behind (detached).
bool Await(Worker& w, Generation& g, std::thread& t) {
  auto done = [&] {
    std::lock_guard<std::mutex> lock(g.mu);
    return g.done;
  };
  if (w.control) w.control->WaitForRequest(Clock::time_point::max(), done);
  if (!done() && w.control && w.control->requested()) {
    g.stop = true;  // its communicators were aborted; a world of one stops at its next step
    std::unique_lock<std::mutex> lock(g.mu);
    if (!g.cv.wait_for(lock, kAbortGrace, [&] { return g.done; })) {
      lock.unlock();
      DS_LOG(Warn, Comm) << "generation " << g.m.generation << ": a collective did not return within "
                         << kAbortGrace.count() << " ms of its abort; leaving it to its timeout";
      t.detach();
      ++w.abandoned;
      return false;
    }
  }
  t.join();
  return true;
}

// After a generation was interrupted: the reshape to carry out next, when the
// agent asks for one within the collective timeout (a peer's death comes
// before its agent's word); nullopt otherwise.
std::optional<ReshapeRequest> NextReshape(Worker& w) {
  if (!w.control || !w.control->WaitForRequest(Clock::now() + w.comms.timeout)) return std::nullopt;
  return w.control->Take();
}

std::shared_ptr<Generation> StartGeneration(Worker& w, const Membership& m, std::optional<ReshapeRequest> reshape,
                                            std::thread* t) {
  auto g = std::make_shared<Generation>();
  g->m = m;
  g->config = w.config;
  g->rt = w.rt;
  g->store = w.store;
  g->reshape = std::move(reshape);
  *t = std::thread([g, &w] {
    ::pthread_setname_np(::pthread_self(), kTrainingThreadName);  // what a hang report shows
    GenerationEnd end = RunGeneration(w, *g);
    {
      std::lock_guard<std::mutex> lock(g->mu);
      g->end = std::move(end);
      g->done = true;
    }
    g->cv.notify_all();
    if (w.control) w.control->Wake();
  });
  return g;
}

}  // namespace

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "dstrain: error: %s\n", message.c_str());
  return code;
}

int RunGenerations(Worker& w, Membership m) {
  std::optional<ReshapeRequest> reshape;  // the next generation's
  for (;;) {
    std::thread t;
    std::shared_ptr<Generation> g = StartGeneration(w, m, std::move(reshape), &t);
    const bool joined = Await(w, *g, t);
    if (joined && g->end.exit_code) return *g->end.exit_code;
    const std::string why = joined ? g->end.why : "a collective did not return after its abort";
    std::optional<ReshapeRequest> next = NextReshape(w);
    if (!next) {
      if (joined) AnswerReshape(w, *g, false, why);
      return Fail(kDstrainExitComm, why);
    }
    reshape = std::move(next);  // a newer one replaces one still in progress
    const msg::WorkerReshape& r = reshape->reshape;
    if (r.rank < 0) {  // not part of the new world
      Answer(w, *reshape, true, "");
      DS_LOG(Info, Train) << "not part of generation " << r.generation << ": leaving";
      return 0;
    }
    Result<TrainerConfig> config = Status::InvalidArgument(
        fmt::format("WorkerReshape: rank {} of {}: expected 0 <= rank < world", r.rank, r.world));
    if (r.world >= 1 && r.rank < static_cast<int32_t>(r.world)) config = w.resolve_config(static_cast<int>(r.world));
    if (!config.ok()) {
      Answer(w, *reshape, false, config.status().message());
      return Fail(kDstrainExitConfig, config.status().message());
    }
    if (!r.store_addr.empty()) {  // a coordinator took the job over: its store, not the lost one's
      Result<RendezvousStore> store =
          OpenRendezvousStore(RendezvousOptions{r.store_addr, r.store_token, "", w.comms.timeout});
      if (!store.ok()) {
        Answer(w, *reshape, false, store.status().message());
        return Fail(kDstrainExitComm, store.status().message());
      }
      w.store = std::move(store).value();
      DS_LOG(Info, Comm) << "rendezvous through " << w.store.description << " from generation " << r.generation;
    }
    w.config = std::move(config).value();  // the batch geometry follows the world size
    m = Membership{r.generation, r.rank, static_cast<int>(r.world)};
    w.rt.resume_step = r.step;
    w.rt.resume_set = r.set;
    LogSetIdentity(w.host, m.rank);
    DS_LOG(Info, Train) << "reshaping in place after: " << why;
  }
}

}  // namespace ds::rt
