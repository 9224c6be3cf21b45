// The one bounded wait of the C++ tests: for a condition that has no event
// to wait on (a file appears, a counter another thread moves, a process is
// gone), look again every `every` until it holds or `limit` passes. A test
// that can be told (a pipe, a future, a reply) waits for that instead.
// Returns the condition's last value. Header-only; any thread.
#pragma once

#include <chrono>
#include <thread>

namespace ds::testing {

template <typename Cond>
bool WaitUntil(Cond&& cond, std::chrono::milliseconds limit = std::chrono::seconds(20),
               std::chrono::milliseconds every = std::chrono::milliseconds(2)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(every);
  }
  return cond();
}

}  // namespace ds::testing
