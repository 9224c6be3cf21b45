// StoreClient over one authenticated TCP connection (wire_format.md, "Store
// session"). Every request waits for exactly one reply; a request's deadline
// is its own timeout plus a margin for the network.
#include "wire/store_client.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/env_registry.h"
#include "wire/client_conn.h"
#include "wire/protocol.h"

namespace ds {
namespace {

using std::chrono::milliseconds;
constexpr milliseconds kIoMargin{10000};  // beyond a request's own timeout

Deadline After(milliseconds d) { return std::chrono::steady_clock::now() + d; }

uint32_t ClampMs(milliseconds t) {
  return static_cast<uint32_t>(std::clamp<int64_t>(t.count(), 0, 0x7fffffff));
}

class TcpStoreClient final : public StoreClient {
 public:
  TcpStoreClient(UniqueFd fd, std::string addr) : fd_(std::move(fd)), addr_(std::move(addr)) {}

  Status Set(const std::string& key, const std::vector<uint8_t>& value) override {
    DS_ASSIGN_OR_RETURN(Frame f, Call(wire::MsgType::kStoreSet, msg::StoreSet{key, value}.Encode(),
                                      milliseconds(0), key));
    return Expect(f, wire::MsgType::kStoreOk, key);
  }

  Result<std::vector<uint8_t>> Get(const std::string& key, milliseconds timeout) override {
    DS_ASSIGN_OR_RETURN(Frame f, Call(wire::MsgType::kStoreGet, msg::StoreGet{key, ClampMs(timeout)}.Encode(),
                                      timeout, key));
    DS_RETURN_IF_ERROR(Expect(f, wire::MsgType::kStoreValue, key));
    DS_ASSIGN_OR_RETURN(msg::StoreValue v, msg::StoreValue::Decode(f.payload));
    return std::move(v.value);
  }

  Result<int64_t> Add(const std::string& key, int64_t delta) override {
    DS_ASSIGN_OR_RETURN(Frame f, Call(wire::MsgType::kStoreAdd, msg::StoreAdd{key, delta}.Encode(),
                                      milliseconds(0), key));
    DS_RETURN_IF_ERROR(Expect(f, wire::MsgType::kStoreInt, key));
    DS_ASSIGN_OR_RETURN(msg::StoreInt v, msg::StoreInt::Decode(f.payload));
    return v.value;
  }

  Status Wait(const std::vector<std::string>& keys, milliseconds timeout) override {
    std::string what = keys.empty() ? "" : keys.front();
    DS_ASSIGN_OR_RETURN(Frame f, Call(wire::MsgType::kStoreWait,
                                      msg::StoreWait{keys, ClampMs(timeout)}.Encode(), timeout, what));
    return Expect(f, wire::MsgType::kStoreOk, what);
  }

 private:
  Result<Frame> Call(wire::MsgType type, const Bytes& payload, milliseconds timeout, const std::string& key) {
    if (fd_.get() < 0) return Status::Unavailable(fmt::format("store {}: connection is closed", addr_));
    Deadline deadline = After(timeout + kIoMargin);
    Status st = WriteFrame(fd_.get(), type, payload, deadline);
    Result<Frame> f = st.ok() ? ReadFrame(fd_.get(), deadline) : Result<Frame>(st);
    if (!f.ok()) {
      fd_.Reset();  // the stream is out of sync now
      return f.status().Prefixed(fmt::format("store {} key '{}'", addr_, key));
    }
    return f;
  }

  Status Expect(const Frame& f, wire::MsgType want, const std::string& key) {
    if (f.type == want) return Status::OK();
    if (f.type == wire::MsgType::kError) {
      auto e = msg::Error::Decode(f.payload);
      if (!e.ok()) return Status::IOError(fmt::format("store {}: malformed error reply", addr_));
      if (e->code == static_cast<uint32_t>(wire::ErrorCode::kTimeout)) return Status::Timeout(e->message);
      if (e->code == static_cast<uint32_t>(wire::ErrorCode::kNotFound)) return Status::NotFound(e->message);
      return Status::InvalidArgument(e->message);
    }
    fd_.Reset();
    return Status::IOError(fmt::format("store {} key '{}': unexpected reply type {}", addr_, key,
                                       static_cast<int>(f.type)));
  }

  UniqueFd fd_;
  std::string addr_;
};

}  // namespace

Result<std::unique_ptr<StoreClient>> StoreClient::Connect(const std::string& addr, const std::string& token,
                                                           milliseconds timeout) {
  Deadline deadline = After(timeout);
  auto fd = ConnectTcp(addr, "", deadline);
  if (!fd.ok()) return fd.status().Prefixed("store");
  msg::Hello hello;
  hello.role = wire::Role::kStore;
  hello.name = "store-client";
  Status st = ClientHandshake(fd->get(), hello, token, deadline);
  if (!st.ok()) {
    if (st.code() == Status::Code::kPermissionDenied)
      return Status::PermissionDenied(fmt::format("store {}: bad token ({})", addr, st.message()));
    return st.Prefixed(fmt::format("store {}", addr));
  }
  return std::unique_ptr<StoreClient>(std::make_unique<TcpStoreClient>(std::move(*fd), addr));
}

Result<std::unique_ptr<StoreClient>> StoreClient::FromEnv(milliseconds timeout) {
  std::string addr = EnvString("DSLAUNCH_STORE_ADDR");
  if (addr.empty()) return Status::InvalidArgument("DSLAUNCH_STORE_ADDR is not set (not started by dslaunch?)");
  return Connect(addr, EnvString("DSLAUNCH_STORE_TOKEN"), timeout);
}

}  // namespace ds
