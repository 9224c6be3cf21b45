// Whole-file reads and writes for tests. No error reporting: a test checks
// the contents it expects, so a missing file reads as "". Thread-safe.
#pragma once

#include <cstdio>
#include <string>

namespace ds::testing {

// Replaces `path` with `text`.
void WriteFile(const std::string& path, const std::string& text);
// The bytes of `path`; "" if it is missing or unreadable.
std::string ReadFile(const std::string& path);
// Everything written to the stream `f` so far (a tmpfile()): flushes and
// rewinds it, then reads it all.
std::string ReadStream(FILE* f);

}  // namespace ds::testing
