// Test helpers for the command line: parse and require success, or require
// an error and return its message. Header-only, for tests/launcher/cmd/.
#pragma once

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "launcher/cmd/cli.h"

namespace ds::testing {

using Argv = std::vector<std::string>;

inline CliOptions Parse(const Argv& args) {
  auto r = ParseCli(args);
  INFO(r.status().message());
  REQUIRE(r.ok());
  return *r;
}

inline std::string ErrorOf(const Argv& args) {
  auto r = ParseCli(args);
  REQUIRE_FALSE(r.ok());
  return r.status().message();
}

}  // namespace ds::testing
