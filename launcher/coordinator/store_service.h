// StoreService: answers the store requests (wire_format.md, "Store session")
// of authenticated connections from a KvStore, with per-request timeouts on
// the coordinator's io_context. Every request gets exactly one reply; a
// timed-out Get/Wait names the missing key. Not thread-safe: io thread only.
#pragma once

#include <memory>

#include "common/asio.h"
#include "launcher/coordinator/frame_conn.h"
#include "launcher/coordinator/kv_store.h"

namespace ds {

class StoreService {
 public:
  StoreService(asio::io_context& io, KvStore& store) : io_(io), store_(store) {}

  // Handles one frame. Returns an error (the caller logs it and closes the
  // connection) for a frame that is not a well-formed store request.
  Status Handle(const std::shared_ptr<FrameConn>& conn, const Frame& f);

 private:
  void WaitThenReply(const std::shared_ptr<FrameConn>& conn, std::vector<std::string> keys,
                     uint32_t timeout_ms, std::function<void()> reply);

  asio::io_context& io_;
  KvStore& store_;
};

}  // namespace ds
