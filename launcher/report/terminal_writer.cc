#include "launcher/report/terminal_writer.h"

#include <fmt/format.h>

namespace ds {

TerminalWriter::TerminalWriter(FILE* out, size_t max_bytes, std::string where_kept)
    : out_(out), max_bytes_(max_bytes), where_kept_(std::move(where_kept)), thread_([this] { Run(); }) {}

TerminalWriter::~TerminalWriter() {
  Flush();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

bool TerminalWriter::Write(std::vector<Chunk> chunks) {
  size_t size = 0;
  for (const Chunk& c : chunks) size += c.text.size();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (bytes_ + size > max_bytes_) {
      ++dropped_;
      ++gap_;
      return false;
    }
    QueueGapNoticeLocked();
    bytes_ += size;
    for (Chunk& c : chunks) queue_.push_back(std::move(c));
  }
  wake_.notify_one();
  return true;
}

void TerminalWriter::QueueGapNoticeLocked() {
  if (gap_ == 0) return;
  std::string notice = fmt::format("dslaunch: {} lines not shown here: the reader of stdout fell behind ({})\n",
                                   gap_, where_kept_);
  gap_ = 0;
  bytes_ += notice.size();
  queue_.push_back(Chunk{out_, std::move(notice)});
}

void TerminalWriter::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  QueueGapNoticeLocked();
  wake_.notify_one();
  idle_.wait(lock, [this] { return queue_.empty() && !writing_; });
}

uint64_t TerminalWriter::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

// Takes everything queued, writes it with the lock released (this is where a
// stalled reader blocks: here only), flushes, and frees its share of the budget.
void TerminalWriter::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_, nothing left
    std::deque<Chunk> batch;
    batch.swap(queue_);
    writing_ = true;
    lock.unlock();
    size_t n = 0;
    FILE* last = out_;
    for (const Chunk& c : batch) {
      if (c.to != last) std::fflush(last);  // in order across FILEs
      last = c.to;
      std::fwrite(c.text.data(), 1, c.text.size(), c.to);  // errors (EPIPE: reader gone) just lose the text
      n += c.text.size();
    }
    std::fflush(last);
    if (last != out_) std::fflush(out_);
    lock.lock();
    bytes_ -= n;
    writing_ = false;
    if (queue_.empty()) idle_.notify_all();
  }
}

}  // namespace ds
