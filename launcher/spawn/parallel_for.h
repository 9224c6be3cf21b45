// ParallelFor: bounded fan-out. Runs fn(i) for every i in [0, n) on at most
// `fanout` threads (at least one) and returns when all calls are done. fn
// must be safe to call concurrently for different i. An exception thrown by
// fn never escapes its thread: the first one is rethrown here, on the
// caller's thread, once every thread has finished (the others' indices still
// run). Included by ssh_spawner.h; header-only.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace ds {

template <typename Fn>
void ParallelFor(size_t n, int fanout, Fn fn) {
  size_t threads = std::min<size_t>(n, static_cast<size_t>(std::max(1, fanout)));
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::exception_ptr first;
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (size_t t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (size_t i; (i = next.fetch_add(1)) < n;) {
        try {
          fn(i);
        } catch (...) {
          std::lock_guard<std::mutex> lock(mu);
          if (!first) first = std::current_exception();
        }
      }
    });
  for (auto& th : pool) th.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace ds
