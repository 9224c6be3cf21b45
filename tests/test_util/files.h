// Whole-file reads and writes for tests. No error reporting: a test checks
// the contents it expects, so a missing file reads as "". Thread-safe.
#pragma once

#include <string>

namespace ds::testing {

// Replaces `path` with `text`.
void WriteFile(const std::string& path, const std::string& text);
// The bytes of `path`; "" if it is missing or unreadable.
std::string ReadFile(const std::string& path);

}  // namespace ds::testing
