// KvStore: values, counters, and waiters filed under the key they still miss.
#include "launcher/coordinator/kv_store.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

Bytes B(const std::string& s) { return Bytes(s.begin(), s.end()); }

TEST_CASE("kv store: a waiter on several keys runs once, when the last of them is set, in any order",
          "[kvstore]") {
  KvStore store;
  int ran = 0;
  REQUIRE(store.AddWaiter({"a", "b", "c"}, [&] { ++ran; }) != 0);
  store.Set("c", B("3"));  // not the key it is filed under: it must still count
  store.Set("x", B("?"));
  CHECK(ran == 0);
  store.Set("a", B("1"));
  CHECK(ran == 0);
  CHECK(store.num_waiters() == 1);
  store.Set("b", B("2"));
  CHECK(ran == 1);
  CHECK(store.num_waiters() == 0);
  store.Set("b", B("again"));
  CHECK(ran == 1);
}

TEST_CASE("kv store: a removed waiter never runs; one on existing keys runs at once", "[kvstore]") {
  KvStore store;
  int ran = 0;
  const uint64_t id = store.AddWaiter({"k"}, [&] { ++ran; });
  store.RemoveWaiter(id);
  store.Set("k", B("v"));
  CHECK(ran == 0);
  CHECK(store.AddWaiter({"k"}, [&] { ++ran; }) == 0);
  CHECK(ran == 1);
}

TEST_CASE("kv store: a thousand ranks on a barrier are all released by the last Add's Set", "[kvstore]") {
  KvStore store;
  int released = 0;
  for (int r = 0; r < 1000; ++r) {
    REQUIRE(store.Add("barrier", 1).value() == r + 1);
    store.AddWaiter({"barrier_done"}, [&] { ++released; });
  }
  CHECK(released == 0);
  store.Set("barrier_done", B("1"));
  CHECK(released == 1000);
  CHECK(store.num_waiters() == 0);
}

TEST_CASE("kv store: after Clear a waiter refiled on a later key still needs the cleared one", "[kvstore]") {
  KvStore store;
  int ran = 0;
  store.Set("a", B("1"));
  store.AddWaiter({"a", "b"}, [&] { ++ran; });  // filed under b
  store.Clear();
  store.Set("b", B("2"));  // a is gone again: refiled under a
  CHECK(ran == 0);
  store.Set("a", B("1"));
  CHECK(ran == 1);
}

TEST_CASE("kv store: Add counts in decimal text and refuses a non-integer value", "[kvstore]") {
  KvStore store;
  CHECK(store.Add("n", 5).value() == 5);
  CHECK(store.Add("n", -2).value() == 3);
  CHECK(store.Get("n") == B("3"));
  store.Set("s", B("abc"));
  auto bad = store.Add("s", 1);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "key 's' holds a non-integer value");
}

}  // namespace
}  // namespace ds
