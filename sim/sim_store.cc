#include "sim/sim_store.h"

#include <memory>

#include <fmt/format.h>

#include "sim/sim_conn.h"
#include "wire/protocol.h"

namespace ds::sim {
namespace {

constexpr uint32_t kWaitMs = 120000;  // a blocking get/wait gives up after this
constexpr size_t kUniqueIdBytes = 128;  // ncclUniqueId

// The pattern as a small state machine: each reply moves it one step.
struct Session {
  enum class Step { kPublish, kGet, kAdd, kSetDone, kWait };
  BootstrapSpec spec;
  std::shared_ptr<SimConn> conn;
  Step step = Step::kGet;
  std::function<void(bool, const std::string&)> done;
  std::string Key(const char* name) const { return fmt::format("sim/g{}/{}", spec.generation, name); }

  void Finish(bool ok, const std::string& why) {
    if (!done) return;
    auto cb = std::move(done);
    done = nullptr;
    conn->Close();
    cb(ok, why);
  }
  void Begin() {
    if (spec.rank == 0) {
      step = Step::kPublish;
      return conn->Send(wire::MsgType::kStoreSet, msg::StoreSet{Key("unique_id"), Bytes(kUniqueIdBytes, 7)}.Encode());
    }
    Get();
  }
  void Get() {
    step = Step::kGet;
    conn->Send(wire::MsgType::kStoreGet, msg::StoreGet{Key("unique_id"), kWaitMs}.Encode());
  }
  void Wait() {
    step = Step::kWait;
    conn->Send(wire::MsgType::kStoreWait, msg::StoreWait{{Key("barrier_done")}, kWaitMs}.Encode());
  }
  void OnFrame(const Frame& f) {
    if (f.type == wire::MsgType::kError) {
      auto e = msg::Error::Decode(f.payload);
      return Finish(false, "store error: " + (e.ok() ? e->message : std::string("?")));
    }
    switch (step) {
      case Step::kPublish:
        if (f.type != wire::MsgType::kStoreOk) break;
        return Get();
      case Step::kGet: {
        auto v = msg::StoreValue::Decode(f.payload);
        if (f.type != wire::MsgType::kStoreValue || !v.ok() || v->value.size() != kUniqueIdBytes) break;
        step = Step::kAdd;
        return conn->Send(wire::MsgType::kStoreAdd, msg::StoreAdd{Key("barrier"), 1}.Encode());
      }
      case Step::kAdd: {
        auto n = msg::StoreInt::Decode(f.payload);
        if (f.type != wire::MsgType::kStoreInt || !n.ok()) break;
        if (n->value != spec.world) return Wait();
        step = Step::kSetDone;
        return conn->Send(wire::MsgType::kStoreSet, msg::StoreSet{Key("barrier_done"), Bytes{'1'}}.Encode());
      }
      case Step::kSetDone:
        if (f.type != wire::MsgType::kStoreOk) break;
        return Wait();
      case Step::kWait:
        if (f.type != wire::MsgType::kStoreOk) break;
        return Finish(true, "");
    }
    Finish(false, fmt::format("unexpected reply (message type {})", static_cast<int>(f.type)));
  }
};

}  // namespace

void RunBootstrap(asio::io_context& io, const asio::ip::tcp::endpoint& store, const asio::ip::address& from,
                  const BootstrapSpec& spec, std::function<void(bool ok, const std::string& why)> done) {
  auto s = std::make_shared<Session>();
  s->spec = spec;
  s->done = std::move(done);
  s->conn = std::make_shared<SimConn>(io);
  msg::Hello hello;
  hello.role = wire::Role::kStore;
  hello.name = fmt::format("rank {}", spec.rank);
  hello.job_id = spec.job_id;
  // The session lives as long as its connection's handlers hold it.
  s->conn->Start(
      store, from, hello, spec.store_token, [s] { s->Begin(); }, [s](const Frame& f) { s->OnFrame(f); },
      [s](const std::string& why) { s->Finish(false, why); });
}

}  // namespace ds::sim
