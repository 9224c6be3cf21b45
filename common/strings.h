// Small string helpers shared by the parsers: strict integer parsing, trimming,
// splitting (also of relayed output into lines), and "did you mean" suggestions. Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ds {

std::string_view Trim(std::string_view s);
std::vector<std::string> Split(std::string_view s, char sep);
bool StartsWith(std::string_view s, std::string_view prefix);
// An environment variable name as shells accept it: [A-Za-z_][A-Za-z0-9_]*.
bool IsEnvVarName(std::string_view s);

// Parses the whole of `s` as a base-10 integer; nullopt on any garbage
// ("4abc", "", " 4", overflow).
std::optional<int64_t> ParseInt(std::string_view s);

// Parses a duration: "250ms", "3s", "2m", "1h" or a bare number of seconds.
std::optional<double> ParseSeconds(std::string_view s);

// Levenshtein distance.
size_t EditDistance(std::string_view a, std::string_view b);

// The candidate closest to `word` if it is close enough to be a likely typo
// (distance <= max(1, len/3)); empty otherwise.
std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates);
// " (did you mean 'slots'?)" for DidYouMean's answer, "" when it has none.
std::string DidYouMeanHint(std::string_view word, const std::vector<std::string>& candidates);

// Calls `fn(line)` for each complete line at the front of `pending` (without
// its '\n') and erases them; an unfinished last line stays for the next read.
// For output relayed from a pipe or a channel in chunks.
template <typename Fn>
void TakeLines(std::string& pending, Fn&& fn) {
  size_t start = 0, nl;
  while ((nl = pending.find('\n', start)) != std::string::npos) {
    fn(pending.substr(start, nl - start));
    start = nl + 1;
  }
  pending.erase(0, start);
}

// `s` safe to print: printable ASCII (0x20-0x7e) kept, every other byte
// written as \xNN (lower-case hex), so a peer-supplied string can neither end
// a log line nor send terminal escapes. Idempotent.
std::string Printable(std::string_view s);
// The same for a message of several lines that quotes what a file said (a
// parse error and its echoed line): newlines and tabs kept, every other
// byte Printable writes as \xNN escaped. The one function input errors go
// through before they reach a terminal.
std::string PrintableText(std::string_view s);

// Quotes `s` for a POSIX shell (single quotes), only when needed.
std::string ShellQuote(std::string_view s);

}  // namespace ds
