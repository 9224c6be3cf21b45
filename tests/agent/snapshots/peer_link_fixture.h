// What the peer link tests share: shards as values and as files, and
// MapService, a ShardService that keeps shards in a map (and after Serve(),
// serves them on a real PeerServer on 127.0.0.1). Thread-safe: the server's
// thread and the test's meet under one mutex.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "agent/snapshots/peer_link.h"
#include "checkpoint_format/checkpoint_format.h"
#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"
#include "wire/snapshot_handoff.h"

namespace ds::testing {

inline Deadline Soon() { return std::chrono::steady_clock::now() + std::chrono::seconds(10); }

// The save every Copy is of: its manifest is "{m}".
inline const std::string kSet = ManifestDigest("{m}");

inline ShardCopy Copy(int64_t step, uint32_t shard, const std::string& data) {
  ShardCopy c;
  c.held.entry = msg::ShardEntry{step, shard, msg::SnapshotId{"ab", 4, 0, "c0", kSet}, 1, 1, data.size()};
  c.held.crc32 = ckpt::Crc32(data);
  c.manifest = "{m}";
  c.data = data;
  return c;
}

// `c` as an open shard file (what the agent sends from).
inline ShardFile FileOf(const TempDir& dir, const ShardCopy& c) {
  const std::string name = "shard-" + std::to_string(c.held.entry.step) + "-" + std::to_string(c.held.entry.shard);
  WriteFile(dir / name, c.data);
  auto f = OpenShardFile(Dir::Open(dir.path(), "test directory").value(), name, c.held, c.manifest);
  REQUIRE(f.ok());
  return std::move(f).value();
}

class MapService : public ShardService {
 public:
  MapService() = default;
  ~MapService() override { server_.reset(); }  // the thread stops before the map goes
  // Starts the server (once this object, and any subclass, is whole); the
  // job's nodes are at `peers` (host:port).
  void Serve(const PeerIdentity& me, const std::vector<std::string>& peers = {"127.0.0.1:1"}) {
    auto s = PeerServer::Start("127.0.0.1", me, this, 5.0);
    REQUIRE(s.ok());
    server_ = std::move(s).value();
    server_->AllowPeers(peers);
  }
  PeerServer& server() { return *server_; }

  const std::string& addr() const { return server_->addr(); }
  OpenSink Opener() {
    return [this](const HeldShard& h, const std::string& m) { return MapService::Receive(h, m); };
  }
  bool Has(int64_t step, uint32_t shard) {
    std::lock_guard<std::mutex> lock(mu_);
    return shards_.count({step, shard}) > 0;
  }
  std::string Data(int64_t step, uint32_t shard) {
    std::lock_guard<std::mutex> lock(mu_);
    return shards_[{step, shard}].data;
  }
  std::string Manifest(int64_t step, uint32_t shard) {
    std::lock_guard<std::mutex> lock(mu_);
    return shards_[{step, shard}].manifest;
  }
  // What the server reported when its thread stopped ("" if not by `deadline`).
  std::string WaitFailed(Deadline deadline) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_until(lock, deadline, [&] { return !failed_.empty(); });
    return failed_;
  }

  Result<ShardFile> Lookup(int64_t step, const std::string& set, uint32_t shard) override {
    ShardCopy c;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = shards_.find({step, shard});
      if (it == shards_.end() || it->second.held.entry.id.set != set) return Status::NotFound("not held");
      c = it->second;
    }
    return FileOf(dir_, c);
  }
  Result<std::unique_ptr<ShardSink>> Receive(const HeldShard& held, const std::string& manifest) override {
    return std::unique_ptr<ShardSink>(std::make_unique<Sink>(this, ShardCopy{held, manifest, {}}));
  }
  void Received(const HeldShard&) override {}
  void ServerFailed(const std::string& what) override {
    std::lock_guard<std::mutex> lock(mu_);
    failed_ = what;
    cv_.notify_all();
  }

 private:
  // Gathers the bytes; Commit() puts them in the map.
  struct Sink : ShardSink {
    Sink(MapService* s, ShardCopy c) : service(s), copy(std::move(c)) {}
    Status Write(const uint8_t* data, size_t n) override {
      copy.data.append(reinterpret_cast<const char*>(data), n);
      return Status::OK();
    }
    Status Commit() override {
      std::lock_guard<std::mutex> lock(service->mu_);
      service->shards_[{copy.held.entry.step, copy.held.entry.shard}] = copy;
      return Status::OK();
    }
    MapService* service;
    ShardCopy copy;
  };

  TempDir dir_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::pair<int64_t, uint32_t>, ShardCopy> shards_;
  std::string failed_;
  std::unique_ptr<PeerServer> server_;  // last: stops first
};

}  // namespace ds::testing
