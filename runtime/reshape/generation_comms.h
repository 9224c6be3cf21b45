// GenerationComms: the communicators of one generation of a dstrain worker
// (a start, or an in-place reshape): the training one (Gloo, or NCCL through
// the GPU plugin) and the snapshot helper's own Gloo one, both connected
// through the job's store under that generation's keys (gloo_store.h
// GenerationStore), so nothing of an earlier world is reused. While it
// lives, each is registered with the control channel (when there is one),
// which aborts them for a reshape. Used by the training thread; the
// communicators' Abort from the channel's thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include <gloo/rendezvous/store.h>

#include "runtime/comm/communicator.h"
#include "runtime/reshape/control_channel.h"
#include "runtime/engine/device_plugin.h"

namespace ds::rt {

// Where this rank stands in one generation.
struct Membership {
  uint32_t generation = 0;  // DSLAUNCH_GENERATION, then each WorkerReshape's
  int rank = 0;
  int world = 1;
};

struct CommsOptions {
  std::string job_id;                        // DSLAUNCH_JOB_ID: part of every key
  std::string backend = "gloo";              // trainer.backend: gloo or nccl
  std::string iface;                         // GLOO_SOCKET_IFNAME
  std::string master_addr;                   // MASTER_ADDR: picks the local address
  std::chrono::milliseconds timeout{60000};  // DSLAUNCH_COLLECTIVE_TIMEOUT
  bool snapshots = false;                    // also the snapshot helper's communicator
  DevicePlugin* plugin = nullptr;            // backend nccl
  int gpu = -1;
};

class GenerationComms {
 public:
  // Connects `m`'s ranks through `store` (collective: every rank of the
  // generation calls it); a world of one needs nobody (nor a store). Throws
  // CommError.
  static std::unique_ptr<GenerationComms> Connect(gloo::rendezvous::Store* store, const Membership& m,
                                                  const CommsOptions& options, ControlChannel* control);
  ~GenerationComms();  // unregisters from the control channel, then disconnects
  GenerationComms(const GenerationComms&) = delete;
  GenerationComms& operator=(const GenerationComms&) = delete;

  Communicator& training() { return training_ ? *training_ : alone_; }
  Communicator* snapshots() { return snapshots_.get(); }  // null without snapshots, or alone

 private:
  explicit GenerationComms(ControlChannel* control) : control_(control) {}

  ControlChannel* const control_;
  LocalCommunicator alone_;
  std::unique_ptr<gloo::rendezvous::Store> keys_;  // this generation's view of the store
  std::unique_ptr<Communicator> training_, snapshots_;
};

}  // namespace ds::rt
