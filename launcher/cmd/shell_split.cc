#include "launcher/cmd/shell_split.h"

#include <string_view>

#include "common/strings.h"

namespace ds {

Result<std::vector<std::string>> ShellSplit(const std::string& text, const std::string& what) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  auto unterminated = [&](const char* q) {
    return Status::InvalidArgument(what + ": unterminated " + q + " in '" + Printable(text) + "'");
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\'') {  // everything up to the next ' as is
      size_t end = text.find('\'', i + 1);
      if (end == std::string::npos) return unterminated("' quote");
      word += text.substr(i + 1, end - i - 1);
      i = end;
    } else if (c == '"') {  // \ escapes only " \ $ ` and newline
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\' && i + 1 < text.size() && std::string_view("\"\\$`\n").find(text[i + 1]) != std::string::npos) {
          if (text[++i] == '\n') continue;
        }
        word += text[i];
      }
      if (i >= text.size()) return unterminated("\" quote");
    } else if (c == '\\') {
      if (i + 1 >= text.size()) return unterminated("\\ escape");
      if (text[++i] != '\n') word += text[i];
    } else {
      word += c;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

}  // namespace ds
