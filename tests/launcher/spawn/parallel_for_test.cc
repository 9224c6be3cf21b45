// ParallelFor (launcher/spawn/parallel_for.h): every index runs once, on at
// most `fanout` threads; an exception from one call stays off its thread
// (std::terminate otherwise) and reaches the caller after the others ran.
#include "launcher/spawn/parallel_for.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

namespace ds {
namespace {

TEST_CASE("parallel for: every index once, on at most fanout threads", "[spawn]") {
  std::mutex mu;
  std::multiset<size_t> seen;
  std::set<std::thread::id> threads;
  ParallelFor(50, 4, [&](size_t i) {
    std::lock_guard<std::mutex> lock(mu);
    seen.insert(i);
    threads.insert(std::this_thread::get_id());
  });
  CHECK(seen.size() == 50);
  for (size_t i = 0; i < 50; ++i) CHECK(seen.count(i) == 1);
  CHECK(threads.size() <= 4);
}

TEST_CASE("parallel for: a call that throws does not end the process; the caller gets it after the rest ran",
          "[spawn]") {
  std::atomic<int> done{0};
  auto run = [&] {
    ParallelFor(10, 4, [&](size_t i) {
      if (i == 3) throw std::runtime_error("host 3 broke");
      ++done;
    });
  };
  CHECK_THROWS_WITH(run(), "host 3 broke");
  CHECK(done == 9);
}

}  // namespace
}  // namespace ds
