// The generations one dstrain process takes part in (in-place recovery). It
// trains the first; when its agent sends WorkerReshape over the control
// channel (runtime/reshape/control_channel.h, which aborts the communicators at
// once), the process stays: it drops the trainer and the communicators,
// connects the new world's under the new generation's keys, resumes from the
// save the request names with the loader a restart uses (so the state is a
// restart's at that step, resharded to the new world and ZeRO partition),
// answers WorkerReshaped once every rank agreed on that save, and trains on
// over the data it holds. A collective that fails before the agent's word
// (a peer died) waits for it up to the collective timeout; no word: exit 3
// as before. Any failure during a reshape: WorkerReshaped{ok: 0, why} and a
// non-zero exit, and the launcher restarts everything. A request while a
// reshape is in progress starts over with the newer one.
//
// Each generation trains on a thread of its own: an aborted collective
// normally returns at once, but Gloo (2022) leaves a send or receive posted
// on a connection that ends meanwhile waiting for its timeout. Such a thread
// is given kAbortGrace, then left behind with its trainer and communicators
// (its own copies of config and settings), which it frees when its timeout
// ends it; `abandoned` counts them, and the process then ends with _exit.
// Used from the main thread only.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "common/status.h"
#include "runtime/comm/gloo_store.h"
#include "runtime/config/trainer_config.h"
#include "runtime/reshape/control_channel.h"
#include "runtime/engine/device_plugin.h"
#include "runtime/reshape/generation_comms.h"
#include "runtime/train_data.h"
#include "runtime/trainer.h"

namespace ds::rt {

inline constexpr std::chrono::milliseconds kAbortGrace{250};

// What stays with the process across generations.
struct Worker {
  TrainerConfig config;           // resolved for the first world size
  // The same config resolved for another world size (the batch geometry).
  std::function<Result<TrainerConfig>(int world)> resolve_config;
  TrainerRuntime rt;              // resume_step/set: the first generation's
  CommsOptions comms;
  RendezvousStore store;          // opened once (may be empty for a world of one), again for a
                                  //   WorkerReshape that names another (a coordinator took over)
  std::shared_ptr<const TrainTestData> data;
  std::unique_ptr<ControlChannel> control;  // null: no in-place reshapes
  DevicePlugin* plugin = nullptr;
  DeviceChoice device;
  std::string host;               // log lines' host
  int abandoned = 0;              // generation threads left behind
};

// Prints "dstrain: error: <message>" and returns `code`.
int Fail(int code, const std::string& message);

// Trains every generation this process takes part in, from `first`; the
// exit code (common/dstrain_exit.h). Rank 0 prints the results.
int RunGenerations(Worker& w, Membership first);

}  // namespace ds::rt
