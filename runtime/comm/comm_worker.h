// CommWorker: one background thread that runs communication tasks in the
// order they were posted, so gradient buckets are all-reduced while backward
// keeps computing (DeepSpeed's overlap_comm). The tasks must touch memory the
// poster does not touch until Wait() returns. Post/Wait from one thread only;
// the destructor waits for the queue and joins.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace ds::rt {

class CommWorker {
 public:
  CommWorker();
  ~CommWorker();

  // Queues a task; returns at once.
  void Post(std::function<void()> task);
  // Blocks until every posted task ran; rethrows the first task's exception
  // (later tasks after a failure are dropped).
  void Wait();

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool busy_ = false;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace ds::rt
