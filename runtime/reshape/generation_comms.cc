#include "runtime/reshape/generation_comms.h"

#include <fmt/format.h>
#include <gloo/rendezvous/prefix_store.h>

#include "runtime/comm/gloo_communicator.h"
#include "runtime/comm/gloo_store.h"

namespace ds::rt {
namespace {

GlooOptions GlooOptionsOf(const CommsOptions& o) {
  GlooOptions go;
  go.iface = o.iface;
  go.master_addr = o.master_addr;
  go.timeout = o.timeout;
  return go;
}

}  // namespace

std::unique_ptr<GenerationComms> GenerationComms::Connect(gloo::rendezvous::Store* store, const Membership& m,
                                                          const CommsOptions& options, ControlChannel* control) {
  std::unique_ptr<GenerationComms> c(new GenerationComms(control));
  if (m.world == 1) return c;
  if (store == nullptr)
    throw CommError(fmt::format("rank {} of {}: no rendezvous store (DSLAUNCH_STORE_ADDR or DSLAUNCH_STORE_PATH)",
                                m.rank, m.world));
  c->keys_ = GenerationStore(*store, options.job_id, m.generation);
  if (options.backend == "nccl") {
    c->training_ = options.plugin->ConnectNccl(*c->keys_, m.rank, m.world, options.gpu, options.timeout);
  } else {
    c->training_ = GlooCommunicator::Connect(*c->keys_, m.rank, m.world, GlooOptionsOf(options));
  }
  if (control != nullptr) control->Watch(c->training_.get());
  if (options.snapshots) {
    // Gloo over TCP whatever the training backend, under "snapshots", so its
    // one small allreduce per save never waits for the training thread's
    // collectives (checkpoint_snapshot_writer.h).
    // One small allreduce per save: no sync-mode context (one rendezvous less).
    gloo::rendezvous::PrefixStore keys("snapshots", *c->keys_);
    GlooOptions go = GlooOptionsOf(options);
    go.bulk = false;
    c->snapshots_ = GlooCommunicator::Connect(keys, m.rank, m.world, go);
    if (control != nullptr) control->Watch(c->snapshots_.get());
  }
  return c;
}

GenerationComms::~GenerationComms() {
  if (control_ == nullptr) return;
  if (training_) control_->Unwatch(training_.get());
  if (snapshots_) control_->Unwatch(snapshots_.get());
}

}  // namespace ds::rt
