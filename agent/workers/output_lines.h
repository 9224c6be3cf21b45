// OutputLines: the bytes of one worker pipe (stdout or stderr) turned into
// what a terminal would show, line by line, as the agent relays them
// (wire_format.md "Output"). A complete line is sent collapsed: carriage-
// return updates ("\r 10%|#  |\r 11%|##  |\n", as tqdm writes them) become
// the text after the last '\r' that has text after it. The line in progress,
// once it holds such an update, is reported as a progress update of its
// visible text, each time that text changes. The buffer keeps only the
// visible part of an updating line, so it never grows past kMaxOutputLine
// (longer text is sent as complete lines of that length). Not thread-safe;
// pure: no I/O, no clock (the agent rate-limits updates: ProgressThrottle).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace ds {

constexpr size_t kMaxOutputLine = 64 * 1024;  // longer lines are split

// What a terminal shows of `line` (no newline in it): the text after the
// last '\r' that has text after it; trailing '\r's show nothing new.
std::string_view VisibleText(std::string_view line);

class OutputLines {
 public:
  // `updates` false: lines exactly as written ('\r' kept, no progress
  // updates), only split at newlines and kMaxOutputLine.
  explicit OutputLines(bool updates = true) : updates_(updates) {}

  // `progress` false: a complete line (collapsed); true: the line in
  // progress now shows `text`.
  using Sink = std::function<void(const std::string& text, bool progress)>;

  // Takes `bytes` read from the pipe: emits every line they complete, then
  // at most one progress update for the line left in progress.
  void Append(std::string_view bytes, const Sink& sink);
  // The pipe ended: the line in progress, if any, as a complete line.
  void Finish(const Sink& sink);
  // Bytes held for the line in progress.
  size_t buffered() const { return partial_.size(); }

 private:
  // Sends `line` collapsed, a complete line; the caller drops it from partial_.
  void EmitLine(std::string_view line, const Sink& sink);
  void Compact();

  std::string partial_;       // the line in progress: raw, or "\r" + visible text (+ "\r")
  std::string shown_;         // the last progress update sent for it
  bool updating_ = false;     // a progress update was sent for partial_
  bool updates_;             // collapse '\r' updates and report them
};

}  // namespace ds
