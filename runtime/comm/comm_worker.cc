#include "runtime/comm/comm_worker.h"

namespace ds::rt {

CommWorker::CommWorker() : thread_([this] { Loop(); }) {}

CommWorker::~CommWorker() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void CommWorker::Post(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> l(mu_);
    queue_.push_back(std::move(task));
  }
  cv_.notify_all();
}

void CommWorker::Wait() {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [&] { return queue_.empty() && !busy_; });
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
}

void CommWorker::Loop() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    cv_.wait(l, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_ and nothing left
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    if (error_) continue;  // a failed communicator stays failed: drop the rest
    busy_ = true;
    l.unlock();
    try {
      task();
    } catch (...) {
      l.lock();
      error_ = std::current_exception();
      busy_ = false;
      cv_.notify_all();
      continue;
    }
    l.lock();
    busy_ = false;
    cv_.notify_all();
  }
}

}  // namespace ds::rt
