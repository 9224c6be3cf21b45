// GlooCommunicator: the Communicator on Gloo's TCP transport (CPU). All
// algorithms are Gloo's: bcube/ring allreduce (gloo::allreduce),
// halving-doubling reduce-scatter and persistent allreduce, ring persistent
// all-gather, allgatherv,
// broadcast and barrier. Bootstraps with connectFullMesh over a
// gloo::rendezvous::Store (see gloo_store.h). While pairs connect or close,
// a GlooLoopTicker keeps Gloo's event loop turning (gloo_loop_ticker.h).
//
// Two Gloo contexts (two TCP connections per peer): the main one, in Gloo's
// default async mode, for every collective but one; and a "bulk" one whose
// pairs are in Gloo's sync mode, for the persistent allreduce (gradients)
// and all-gather (ZeRO parameters).
// In sync mode the calling thread writes and reads the socket itself instead
// of handing each message to Gloo's event-loop thread and sleeping until it
// is woken: on loopback a 2.7 MB allreduce of 2 ranks takes ~1.2 ms instead
// of ~3.5 ms, with half the CPU (bench/results/train.md). Sync-mode sends
// block, so two ranks sending to each other at once could deadlock once a
// message outgrows the socket's send buffer: the persistent collectives run
// in pieces of at most `bulk_chunk_bytes` (default: half of
// net.core.wmem_max, at most 1 MiB), below what Gloo gets from SO_SNDBUF;
// Connect takes the smallest over all ranks, so hosts may differ.
// The persistent all-gather and reduce-scatter go through one staging
// buffer of that size, shared by all of them (a communicator is driven by one
// thread at a time).
//
// The network interface is GLOO_SOCKET_IFNAME when set, otherwise the local
// address that routes to MASTER_ADDR (loopback when MASTER_ADDR is local).
// Every collective is bounded by `timeout`; any Gloo failure throws CommError
// and leaves the communicator broken (later calls throw at once). Connect
// ignores SIGPIPE (if it was at its default) so a dead peer is an error, not
// a signal.
// Abort (Gloo has none): shutdown(SHUT_RDWR) of every pair's socket of both
// contexts, through duplicates of their descriptors taken at Connect (so a
// socket Gloo closed meanwhile never turns into someone else's descriptor
// under our hands); the thread blocked in a collective then sees its
// connections end and throws CommError. Connect finds the pairs' sockets as
// the connected TCP sockets it made: no other thread of the process may open
// a TCP connection while a Connect runs.
// Not thread-safe, except Abort().
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "runtime/comm/communicator.h"

namespace gloo {
class Context;
namespace rendezvous { class Store; }
}  // namespace gloo

namespace ds::rt {

struct GlooOptions {
  std::string iface;                               // e.g. "eth0"; empty = route to master_addr
  std::string master_addr = "127.0.0.1";           // used to pick the local address
  std::chrono::milliseconds timeout{60000};        // per collective, and for connecting
  size_t bulk_chunk_bytes = 0;                     // persistent collectives' piece; 0 = default
  bool bulk = true;                                // the sync-mode context; false: one connection per
                                                   //   peer, persistent collectives as one-shot calls
};

class GlooCommunicator : public Communicator {
 public:
  // Connects this rank with the others through `store` (all ranks must use
  // the same store and prefix). Throws CommError on failure or timeout.
  static std::unique_ptr<GlooCommunicator> Connect(gloo::rendezvous::Store& store, int rank,
                                                   int size, const GlooOptions& options);
  ~GlooCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::chrono::milliseconds timeout() const override { return timeout_; }

  void AllReduceSum(float* data, size_t n) override;
  void AllReduceSum(uint16_t* data, size_t n, Half16 format) override;
  void AllReduceSum(double* data, size_t n) override;
  void ReduceScatter(float* in, float* out, const std::vector<size_t>& counts) override;
  void ReduceScatter(uint16_t* in, uint16_t* out, const std::vector<size_t>& counts,
                     Half16 format) override;
  void AllGather(const float* in, float* out, const std::vector<size_t>& counts) override;
  void AllGather(const uint16_t* in, uint16_t* out, const std::vector<size_t>& counts) override;
  void Broadcast(void* data, size_t n, int root) override;
  void Barrier() override;
  bool Abort() override;
  std::unique_ptr<PersistentAllReduce> MakePersistentAllReduce(float* data, size_t n) override;
  std::unique_ptr<PersistentAllGather> MakePersistentAllGather(
      const std::vector<size_t>& counts) override;
  std::unique_ptr<PersistentReduceScatter> MakePersistentReduceScatter(
      const std::vector<size_t>& counts) override;

 private:
  class PersistentReduce;
  class PersistentGather;
  class PersistentScatter;
  struct ScatterClass;
  GlooCommunicator(std::shared_ptr<gloo::Context> context, std::shared_ptr<gloo::Context> bulk,
                   size_t bulk_chunk_bytes, int rank, int size,
                   std::chrono::milliseconds timeout, std::vector<int> abort_fds);
  // Runs fn; any exception becomes CommError and breaks the communicator.
  void Run(const char* what, const std::function<void()>& fn);
  void AllGatherBytes(const void* in, void* out, const std::vector<size_t>& counts,
                      size_t elem);
  uint32_t NextTag() { return tag_++; }

  std::shared_ptr<gloo::Context> context_;
  std::shared_ptr<gloo::Context> bulk_;  // sync-mode pairs; null for one rank
  size_t bulk_chunk_bytes_;
  std::vector<float> bulk_staging_;  // one piece of a persistent all-gather or reduce-scatter
  // Shared by every persistent reduce-scatter; shared_ptr because the type is
  // complete only in gloo_persistent.cc.
  std::vector<std::shared_ptr<ScatterClass>> scatter_classes_;
  int rank_;
  int size_;
  std::chrono::milliseconds timeout_;
  uint32_t tag_ = 1;
  std::string broken_;  // why this communicator is unusable; empty = usable
  const std::vector<int> abort_fds_;  // our duplicates of every pair's socket; closed by the destructor
  std::atomic<bool> aborted_{false};
};

}  // namespace ds::rt
