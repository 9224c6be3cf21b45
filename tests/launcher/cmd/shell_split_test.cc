#include "launcher/cmd/shell_split.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

using Argv = std::vector<std::string>;

TEST_CASE("ShellSplit: words like a shell, nothing expanded or run") {
  auto split = [](const std::string& s) {
    auto r = ShellSplit(s, "t");
    INFO(r.status().message());
    REQUIRE(r.ok());
    return *r;
  };
  CHECK(split("").empty());
  CHECK(split("  a\tb  ") == Argv{"a", "b"});
  CHECK(split("'$HOME' \"$HOME\" `x`") == Argv{"$HOME", "$HOME", "`x`"});  // never expanded
  CHECK(split("\"a \\\"q\\\" \\\\ \\n\"") == Argv{"a \"q\" \\ \\n"});
  CHECK(split("a'b'\"c\"") == Argv{"abc"});
  CHECK(split("''") == Argv{""});
  CHECK(split("a; rm -rf x") == Argv{"a;", "rm", "-rf", "x"});  // no shell: ';' is a character
  CHECK(ShellSplit("\"a", "t").status().message() == "t: unterminated \" quote in '\"a'");
  CHECK(ShellSplit("a\\", "t").status().message() == "t: unterminated \\ escape in 'a\\'");
}

}  // namespace
}  // namespace ds
