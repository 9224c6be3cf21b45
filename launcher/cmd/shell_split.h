// ShellSplit: one string split into words the way a POSIX shell splits a
// command line (blanks; '...' as is; "..." with \" \\ \$ \` escapes; \x
// outside quotes), with nothing expanded and nothing run: `$HOME`, `*` and
// `;` stay characters. Used for --launcher_args. Pure.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace ds {

// The words of `text`. InvalidArgument "<what>: unterminated ' quote in
// '...'" (or " quote, \\ escape) when a quote is not closed.
Result<std::vector<std::string>> ShellSplit(const std::string& text, const std::string& what);

}  // namespace ds
