#include "launcher/fleet/handle_reaper.h"

#include <exception>

#include "common/log.h"

namespace ds {

HandleReaper::~HandleReaper() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void HandleReaper::Reap(std::unique_ptr<AgentHandle> handle) {
  if (!handle) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(handle));
    if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
  }
  wake_.notify_one();
}

// Ends the queued handles one at a time; leaves once closing and empty.
void HandleReaper::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return closing_ || !queue_.empty(); });
    if (queue_.empty()) return;  // closing, nothing left
    std::unique_ptr<AgentHandle> handle = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    try {
      handle->Terminate();
    } catch (const std::exception& e) {  // never past this thread
      DS_LOG(Warn, Agent) << "ending an agent's handle failed: " << e.what();
    }
    handle.reset();  // outside the lock: its destructor may block too
    lock.lock();
  }
}

}  // namespace ds
