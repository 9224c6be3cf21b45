#include "common/torch_error_file.h"

#include <nlohmann/json.hpp>

#include "common/strings.h"

namespace ds {
namespace {

// Nesting depth of JSON text (brackets outside strings), stopping early once
// past `limit`: the DOM is built only for text that stays within it.
int JsonDepth(std::string_view text, int limit) {
  int depth = 0, max_depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') {
      max_depth = std::max(max_depth, ++depth);
      if (max_depth > limit) return max_depth;
    } else if (c == '}' || c == ']') --depth;
  }
  return max_depth;
}

const nlohmann::json* Member(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

std::string StringAt(const nlohmann::json* j) {
  return j != nullptr && j->is_string() ? j->get<std::string>() : std::string();
}

// `n` bytes of `s` or fewer so that no UTF-8 sequence is split at `cut`.
size_t Utf8Boundary(std::string_view s, size_t cut) {
  while (cut > 0 && cut < s.size() && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return cut;
}

bool IsCaretLine(std::string_view line) {
  std::string_view t = Trim(line);
  return !t.empty() && t.find_first_not_of("^~ ") == std::string_view::npos;
}

size_t Indent(std::string_view line) {
  size_t i = 0;
  while (i < line.size() && line[i] == ' ') ++i;
  return i;
}

}  // namespace

std::optional<TorchError> ParseTorchErrorFile(std::string_view text) {
  if (text.size() > kMaxErrorFileBytes || JsonDepth(text, kMaxErrorFileDepth) > kMaxErrorFileDepth)
    return std::nullopt;
  nlohmann::json root = nlohmann::json::parse(text.begin(), text.end(), /*cb=*/nullptr,
                                              /*allow_exceptions=*/false);
  const nlohmann::json* msg = Member(root, "message");
  if (msg == nullptr) return std::nullopt;
  TorchError e;
  if (msg->is_string()) {
    e.message = msg->get<std::string>();
  } else {
    e.message = StringAt(Member(*msg, "message"));
    const nlohmann::json* extra = Member(*msg, "extraInfo");
    if (extra != nullptr) e.traceback = StringAt(Member(*extra, "py_callstack"));
  }
  if (Trim(e.message).empty()) return std::nullopt;
  return e;
}

TorchError BoundForWire(TorchError e) {
  if (e.message.size() > kMaxErrorMessage) e.message.resize(Utf8Boundary(e.message, kMaxErrorMessage));
  if (e.traceback.size() > kMaxErrorTrace) {
    size_t start = e.traceback.size() - kMaxErrorTrace;
    size_t nl = e.traceback.find('\n', start);
    start = nl != std::string::npos && nl + 1 < e.traceback.size() ? nl + 1 : start;
    while (start < e.traceback.size() && (static_cast<unsigned char>(e.traceback[start]) & 0xC0) == 0x80) ++start;
    e.traceback.erase(0, start);
  }
  return e;
}

std::vector<TraceFrame> LastFrames(std::string_view traceback, size_t n) {
  std::vector<std::string_view> lines;
  size_t pos = 0;
  while (pos <= traceback.size()) {
    size_t nl = traceback.find('\n', pos);
    if (nl == std::string_view::npos) nl = traceback.size();
    std::string_view line = traceback.substr(pos, nl - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    pos = nl + 1;
  }
  std::vector<TraceFrame> frames;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view t = Trim(lines[i]);
    if (StartsWith(t, "Traceback (most recent call last)")) frames.clear();  // a chained exception's own
    if (!StartsWith(t, "File \"")) continue;
    TraceFrame f;
    f.location = std::string(t);
    if (i + 1 < lines.size() && Indent(lines[i + 1]) > Indent(lines[i]) && !IsCaretLine(lines[i + 1]) &&
        !StartsWith(Trim(lines[i + 1]), "File \""))
      f.source = std::string(Trim(lines[++i]));
    frames.push_back(std::move(f));
  }
  if (frames.size() > n) frames.erase(frames.begin(), frames.end() - static_cast<ptrdiff_t>(n));
  return frames;
}

}  // namespace ds
