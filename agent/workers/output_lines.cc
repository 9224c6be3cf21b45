#include "agent/workers/output_lines.h"

namespace ds {

std::string_view VisibleText(std::string_view line) {
  size_t end = line.size();
  while (end > 0 && line[end - 1] == '\r') --end;
  const size_t cr = line.rfind('\r', end == 0 ? 0 : end - 1);
  const size_t start = cr == std::string_view::npos || end == 0 ? 0 : cr + 1;
  return end == 0 ? std::string_view() : line.substr(start, end - start);
}

void OutputLines::Append(std::string_view bytes, const Sink& sink) {
  size_t start = 0, nl;
  while ((nl = bytes.find('\n', start)) != std::string_view::npos) {
    partial_.append(bytes.substr(start, nl - start));
    EmitLine(partial_, sink);
    partial_.clear();
    start = nl + 1;
  }
  partial_.append(bytes.substr(start));
  if (updates_) Compact();
  while (partial_.size() > kMaxOutputLine) {
    EmitLine(std::string_view(partial_).substr(0, kMaxOutputLine), sink);
    partial_.erase(0, kMaxOutputLine);
  }
  // An update is a '\r' with text after it; a lone trailing '\r' (the first
  // half of "\r\n") changes nothing on a terminal.
  if (!updates_) return;
  const size_t end = partial_.find_last_not_of('\r');
  if (end == std::string::npos || partial_.rfind('\r', end) == std::string::npos) return;
  const std::string_view visible = VisibleText(partial_);
  if (updating_ && visible == shown_) return;
  shown_.assign(visible);
  updating_ = true;
  sink(shown_, true);
}

void OutputLines::Finish(const Sink& sink) {
  if (!partial_.empty()) EmitLine(partial_, sink);
  partial_.clear();
}

void OutputLines::EmitLine(std::string_view line, const Sink& sink) {
  const std::string text(updates_ ? VisibleText(line) : line);
  shown_.clear();
  updating_ = false;
  sink(text, false);
}

// Keeps "\r" + the visible text (+ one '\r' if it ended with some): what
// a terminal would still show, so updates never grow the buffer.
void OutputLines::Compact() {
  const size_t end = partial_.find_last_not_of('\r');
  if (end == std::string::npos) {  // only '\r's (or empty)
    if (partial_.size() > 1) partial_.resize(1);
    return;
  }
  if (end + 2 < partial_.size()) partial_.resize(end + 2);
  const size_t cr = partial_.rfind('\r', end);
  if (cr != std::string::npos && cr > 0) partial_.erase(0, cr);
}

}  // namespace ds
