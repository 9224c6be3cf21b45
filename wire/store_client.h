// StoreClient: a blocking client of the coordinator's key/value store, used by
// workers (Gloo/NCCL bootstrap) and tests. One TCP connection, authenticated
// with the per-generation token from DSLAUNCH_STORE_TOKEN. Not thread-safe:
// use one client per thread. The wire format is in wire/wire_format.h.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace ds {

class StoreClient {
 public:
  // Connects to "host:port" and authenticates; an error names the address
  // and the reason (refused, timeout, bad token).
  static Result<std::unique_ptr<StoreClient>> Connect(const std::string& addr,
                                                       const std::string& token,
                                                       std::chrono::milliseconds timeout);
  // Connects with DSLAUNCH_STORE_ADDR / DSLAUNCH_STORE_TOKEN.
  static Result<std::unique_ptr<StoreClient>> FromEnv(std::chrono::milliseconds timeout);
  virtual ~StoreClient() = default;

  // Sets key to value (overwrites).
  virtual Status Set(const std::string& key, const std::vector<uint8_t>& value) = 0;
  // Waits until key exists (up to timeout) and returns its value; Timeout otherwise.
  virtual Result<std::vector<uint8_t>> Get(const std::string& key, std::chrono::milliseconds timeout) = 0;
  // Adds delta to the integer at key (missing = 0) and returns the new value.
  virtual Result<int64_t> Add(const std::string& key, int64_t delta) = 0;
  // Waits until every key exists; Timeout names the first missing key.
  virtual Status Wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
};

}  // namespace ds
