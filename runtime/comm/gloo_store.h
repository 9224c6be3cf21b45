// Rendezvous stores for Gloo's connectFullMesh:
//  - StoreClientStore: a gloo::rendezvous::Store over ds::StoreClient (the
//    coordinator's key/value store), so a worker needs no extra port or file.
//  - OpenRendezvousStore: picks the store from the environment
//    (DSLAUNCH_STORE_ADDR, else DSLAUNCH_STORE_PATH = a gloo FileStore
//    directory for standalone multi-process runs), opened once per process;
//  - GenerationStore: a view of it whose keys carry the job and generation,
//    so a later generation (a restart, or survivors reshaped in place over
//    the same store connection) never reads an earlier one's addresses.
// Store methods throw CommError on failure (Gloo's contract is exceptions).
// StoreClientStore is thread-safe (one request at a time on the connection:
// a generation's thread left behind inside its rendezvous holds it until its
// wait times out, and the next generation's waits for it); the rest is not.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include <gloo/rendezvous/store.h>

#include "common/status.h"

namespace ds {
class StoreClient;
}

namespace ds::rt {

class StoreClientStore : public gloo::rendezvous::Store {
 public:
  StoreClientStore(StoreClient& client, std::chrono::milliseconds timeout)
      : client_(client), timeout_(timeout) {}
  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

 private:
  StoreClient& client_;
  std::chrono::milliseconds timeout_;
  std::mutex mu_;  // the connection carries one request and its answer at a time
};

// A store plus whatever owns its backing connection.
struct RendezvousStore {
  std::shared_ptr<void> backing;                    // StoreClient or FileStore
  gloo::rendezvous::Store* store = nullptr;         // owned by backing; keys unprefixed
  std::string description;                          // "store 10.0.0.1:29400" / "file /tmp/x"
};

struct RendezvousOptions {
  std::string store_addr;   // DSLAUNCH_STORE_ADDR (host:port); wins over store_path
  std::string store_token;  // DSLAUNCH_STORE_TOKEN
  std::string store_path;   // DSLAUNCH_STORE_PATH (directory)
  std::chrono::milliseconds timeout{60000};
};

// Opens the store; an error says which variable to set when neither is.
Result<RendezvousStore> OpenRendezvousStore(const RendezvousOptions& options);

// `base` with every key under "dstrain/<job_id>/<generation>/gloo/"; `base`
// must outlive it.
std::unique_ptr<gloo::rendezvous::Store> GenerationStore(gloo::rendezvous::Store& base, const std::string& job_id,
                                                         uint32_t generation);

}  // namespace ds::rt
