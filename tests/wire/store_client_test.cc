// StoreClient against the real coordinator store (run on a background io
// thread): round trips, blocking get, counters, timeouts and bad tokens.
#include "wire/store_client.h"

#include <catch2/catch.hpp>

#include <future>
#include <thread>

#include "tests/wire/store_fixture.h"
#include "wire/hmac_auth.h"

namespace ds {
namespace {

using std::chrono::milliseconds;

using testing::StoreFixture;

// What `read` returns, read on the fixture's io thread (where the store lives).
template <typename F>
auto OnIo(StoreFixture& f, F read) {
  std::promise<decltype(read())> p;
  asio::post(f.io, [&] { p.set_value(read()); });
  return p.get_future().get();
}

std::unique_ptr<StoreClient> MustConnect(const StoreFixture& f) {
  auto c = StoreClient::Connect(f.addr, f.token, milliseconds(5000));
  REQUIRE(c.ok());
  return std::move(c).value();
}

TEST_CASE("store: set then get returns the bytes unchanged", "[store]") {
  StoreFixture f;
  auto c = MustConnect(f);
  std::vector<uint8_t> v = {0, 1, 2, 255, '\n', '$'};
  REQUIRE(c->Set("k", v).ok());
  auto got = c->Get("k", milliseconds(100));
  REQUIRE(got.ok());
  CHECK(*got == v);
}

TEST_CASE("store: get of a missing key times out naming the key", "[store]") {
  StoreFixture f;
  auto c = MustConnect(f);
  auto got = c->Get("nccl_id", milliseconds(50));
  REQUIRE(!got.ok());
  CHECK(got.status().code() == Status::Code::kTimeout);
  CHECK(got.status().message() == "timed out after 50 ms waiting for key 'nccl_id'");
  // The connection is still usable.
  CHECK(c->Set("x", {1}).ok());
}

TEST_CASE("store: get blocks until another client sets the key", "[store]") {
  StoreFixture f;
  auto waiter = MustConnect(f);
  auto setter = MustConnect(f);
  size_t blocked = 0;
  bool set = false;
  std::thread t([&] {  // sets the key once the waiter is blocked on it, not before
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while ((blocked = OnIo(f, [&] { return f.coord->store_waiters(); })) == 0 &&
           std::chrono::steady_clock::now() < deadline) {
    }
    set = setter->Set("late", {'o', 'k'}).ok();
  });
  auto got = waiter->Get("late", milliseconds(10000));
  t.join();
  CHECK(blocked == 1);
  CHECK(set);
  REQUIRE(got.ok());
  CHECK(*got == std::vector<uint8_t>{'o', 'k'});
}

TEST_CASE("store: add counts and wait sees every key", "[store]") {
  StoreFixture f;
  auto c = MustConnect(f);
  CHECK(*c->Add("n", 1) == 1);
  CHECK(*c->Add("n", 5) == 6);
  auto text = c->Get("n", milliseconds(10));
  REQUIRE(text.ok());
  CHECK(std::string(text->begin(), text->end()) == "6");
  REQUIRE(c->Set("a", {1}).ok());
  auto w = c->Wait({"a", "b"}, milliseconds(30));
  CHECK(w.code() == Status::Code::kTimeout);
  CHECK(w.message() == "timed out after 30 ms waiting for key 'b'");
  REQUIRE(c->Set("b", {1}).ok());
  CHECK(c->Wait({"a", "b"}, milliseconds(30)).ok());
  REQUIRE(c->Set("s", {'x'}).ok());
  auto bad = c->Add("s", 1);
  CHECK(bad.status().message() == "key 's' holds a non-integer value");
}

TEST_CASE("store: a wrong token is refused", "[store]") {
  StoreFixture f;
  auto c = StoreClient::Connect(f.addr, StoreToken("s3cret", "job1", 7), milliseconds(5000));
  REQUIRE(!c.ok());
  CHECK(c.status().code() == Status::Code::kPermissionDenied);
  CHECK(c.status().message().find("bad token") != std::string::npos);
}

TEST_CASE("store: connection refused names the address", "[store]") {
  auto c = StoreClient::Connect("127.0.0.1:1", "t", milliseconds(2000));
  REQUIRE(!c.ok());
  CHECK(c.status().message() == "store: 127.0.0.1:1: Connection refused");
}

}  // namespace
}  // namespace ds
