// TerminalWriter: dslaunch's stdout, written by a thread of its own so that a
// slow or stalled reader (`| less` not scrolled, a slow `tee`) never blocks
// the coordinator's io thread, which must keep answering heartbeats.
// Lines wait in a queue of at most `max_bytes`. When it is full, a new line is
// DROPPED from the terminal and counted; once lines fit again, one line
// "dslaunch: N lines not shown here ..." marks the gap, in place. (Blocking
// the relay instead is not possible without blocking heartbeats: an agent's
// Output lines and its Pings share one connection.) The per-rank log files
// (LogMux, --log-dir) are written elsewhere and keep every line.
// A write may also name another FILE (LogMux's status line: stdout and
// stderr on one terminal go through one writer, so their order holds).
// Thread-safe: Write and Flush from any thread; only the writer thread
// touches `out` (and the FILEs writes name) once constructed.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ds {

class TerminalWriter {
 public:
  // `out` must outlive the writer. `where_kept` ends the gap notice, e.g.
  // "every line is in the --log-dir files".
  TerminalWriter(FILE* out, size_t max_bytes, std::string where_kept);
  // Writes everything queued (waiting for the reader), then stops the thread.
  ~TerminalWriter();

  // Queues `text` (whole lines with their newlines). Returns false when the
  // queue is full and `text` was dropped (counted in dropped()).
  bool Write(std::string text) { return Write({Chunk{out_, std::move(text)}}); }
  // Queues the chunks in order, all or none (the budget counts them together).
  struct Chunk {
    FILE* to;
    std::string text;
  };
  bool Write(std::vector<Chunk> chunks);
  // Returns once every line queued so far is written and `out` flushed.
  void Flush();
  // Lines dropped from the terminal so far.
  uint64_t dropped() const;

 private:
  void Run();
  void QueueGapNoticeLocked();

  FILE* out_;
  const size_t max_bytes_;
  const std::string where_kept_;
  mutable std::mutex mu_;
  std::condition_variable wake_;  // lines queued, or stop
  std::condition_variable idle_;  // the queue drained
  std::deque<Chunk> queue_;
  size_t bytes_ = 0;              // queued + being written
  bool writing_ = false;
  bool stop_ = false;
  uint64_t dropped_ = 0;
  uint64_t gap_ = 0;              // dropped since the last notice
  std::thread thread_;            // last: starts after the fields above exist
};

}  // namespace ds
