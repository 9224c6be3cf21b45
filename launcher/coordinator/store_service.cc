#include "launcher/coordinator/store_service.h"

#include <fmt/format.h>

#include "common/log.h"
#include "common/strings.h"
#include "wire/protocol.h"

namespace ds {
namespace {

void SendError(FrameConn& conn, wire::ErrorCode code, const std::string& m) {
  conn.Send(wire::MsgType::kError, msg::Error{static_cast<uint32_t>(code), m}.Encode());
}

}  // namespace

Status StoreService::Handle(const std::shared_ptr<FrameConn>& conn, const Frame& f) {
  switch (f.type) {
    case wire::MsgType::kStoreSet: {
      DS_ASSIGN_OR_RETURN(msg::StoreSet m, msg::StoreSet::Decode(f.payload));
      DS_LOG(Debug, Store) << "set '" << Printable(m.key) << "' (" << m.value.size() << " bytes) from " << conn->peer();
      store_.Set(m.key, std::move(m.value));
      conn->Send(wire::MsgType::kStoreOk, msg::StoreOk{}.Encode());
      return Status::OK();
    }
    case wire::MsgType::kStoreAdd: {
      DS_ASSIGN_OR_RETURN(msg::StoreAdd m, msg::StoreAdd::Decode(f.payload));
      auto v = store_.Add(m.key, m.delta);
      if (!v.ok()) SendError(*conn, wire::ErrorCode::kInvalid, v.status().message());
      else conn->Send(wire::MsgType::kStoreInt, msg::StoreInt{*v}.Encode());
      return Status::OK();
    }
    case wire::MsgType::kStoreGet: {
      DS_ASSIGN_OR_RETURN(msg::StoreGet m, msg::StoreGet::Decode(f.payload));
      std::string key = m.key;
      WaitThenReply(conn, {m.key}, m.timeout_ms, [this, conn, key] {
        conn->Send(wire::MsgType::kStoreValue, msg::StoreValue{*store_.Get(key)}.Encode());
      });
      return Status::OK();
    }
    case wire::MsgType::kStoreWait: {
      DS_ASSIGN_OR_RETURN(msg::StoreWait m, msg::StoreWait::Decode(f.payload));
      WaitThenReply(conn, m.keys, m.timeout_ms,
                    [conn] { conn->Send(wire::MsgType::kStoreOk, msg::StoreOk{}.Encode()); });
      return Status::OK();
    }
    default:
      return Status::InvalidArgument(fmt::format("message type {} is not a store request",
                                                 static_cast<int>(f.type)));
  }
}

void StoreService::WaitThenReply(const std::shared_ptr<FrameConn>& conn, std::vector<std::string> keys,
                                 uint32_t timeout_ms, std::function<void()> reply) {
  if (!store_.FirstMissing(keys)) return reply();
  if (timeout_ms == 0) {
    SendError(*conn, wire::ErrorCode::kTimeout,
              fmt::format("key '{}' does not exist", *store_.FirstMissing(keys)));
    return;
  }
  struct Pending {
    explicit Pending(asio::io_context& io) : timer(io) {}
    asio::steady_timer timer;
    uint64_t id = 0;
    bool done = false;
  };
  auto p = std::make_shared<Pending>(io_);
  std::vector<std::string> keys_copy = keys;
  p->id = store_.AddWaiter(std::move(keys), [p, reply] {
    if (p->done) return;
    p->done = true;
    p->timer.cancel();
    reply();
  });
  p->timer.expires_after(std::chrono::milliseconds(timeout_ms));
  p->timer.async_wait([this, p, conn, keys_copy, timeout_ms](boost::system::error_code ec) {
    if (ec || p->done) return;
    p->done = true;
    store_.RemoveWaiter(p->id);
    auto missing = store_.FirstMissing(keys_copy);
    SendError(*conn, wire::ErrorCode::kTimeout,
              fmt::format("timed out after {} ms waiting for key '{}'", timeout_ms, missing.value_or("?")));
  });
}

}  // namespace ds
