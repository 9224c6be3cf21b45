// KvStore: the coordinator's key/value store (NCCL unique id, Gloo
// rendezvous). Keys map to byte strings; Add keeps counters as decimal text
// like torch's TCPStore. Waiters are called once every key they wait for
// exists. A waiter is filed under the first of its keys still missing, so a
// Set looks only at the waiters of its own key: thousands of ranks waiting
// on a barrier cost nothing while the others Add and Set. Pure data structure, no I/O and no timers (the caller times out a
// waiter by removing it). Not thread-safe: the coordinator's io thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "wire/frame_io.h"

namespace ds {

class KvStore {
 public:
  using Ready = std::function<void()>;

  // Sets key (overwrites) and runs the waiters that became ready.
  void Set(const std::string& key, Bytes value);
  std::optional<Bytes> Get(const std::string& key) const;
  bool Has(const std::string& key) const { return data_.count(key) != 0; }
  // Adds delta to the counter at key (missing = 0). InvalidArgument when the
  // current value is not a decimal integer: "key 'k' holds a non-integer value".
  Result<int64_t> Add(const std::string& key, int64_t delta);
  // The first key of `keys` that does not exist, or nullopt if all exist.
  std::optional<std::string> FirstMissing(const std::vector<std::string>& keys) const;

  // Registers `ready` to run once all keys exist; runs it now if they do
  // (returning 0). Otherwise returns an id for RemoveWaiter.
  uint64_t AddWaiter(std::vector<std::string> keys, Ready ready);
  void RemoveWaiter(uint64_t id) { waiters_.erase(id); }
  size_t num_waiters() const { return waiters_.size(); }
  size_t size() const { return data_.size(); }
  // Drops every key (a new generation may start from a clean store).
  void Clear() { data_.clear(); }

 private:
  void Notify(const std::string& key);

  struct Waiter {
    std::vector<std::string> keys;
    Ready ready;
  };
  std::map<std::string, Bytes> data_;
  std::map<uint64_t, Waiter> waiters_;
  // key -> waiters filed under it (ids of removed waiters are skipped)
  std::unordered_map<std::string, std::vector<uint64_t>> waiting_on_;
  uint64_t next_id_ = 1;
};

}  // namespace ds
