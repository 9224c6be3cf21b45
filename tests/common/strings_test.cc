#include "common/strings.h"

#include <catch2/catch.hpp>

using namespace ds;

TEST_CASE("ParseInt accepts only whole integers") {
  CHECK(ParseInt("42") == 42);
  CHECK(ParseInt("-3") == -3);
  CHECK_FALSE(ParseInt("4abc"));
  CHECK_FALSE(ParseInt(""));
  CHECK_FALSE(ParseInt(" 4"));
  CHECK_FALSE(ParseInt("99999999999999999999"));
}

TEST_CASE("ParseSeconds understands units") {
  CHECK(ParseSeconds("3s") == 3.0);
  CHECK(ParseSeconds("250ms") == Approx(0.25));
  CHECK(ParseSeconds("2m") == 120.0);
  CHECK(ParseSeconds("1.5") == 1.5);
  CHECK_FALSE(ParseSeconds("fast"));
  CHECK_FALSE(ParseSeconds("-1s"));
}

TEST_CASE("DidYouMean suggests near misses only") {
  std::vector<std::string> keys = {"slots", "ssh_port", "user"};
  CHECK(DidYouMean("slot", keys) == "slots");
  CHECK(DidYouMean("sslots", keys) == "slots");
  CHECK(DidYouMean("ssh_prot", keys) == "ssh_port");
  CHECK(DidYouMean("banana", keys).empty());
}

TEST_CASE("ShellQuote quotes only when needed") {
  CHECK(ShellQuote("abc/def.py") == "abc/def.py");
  CHECK(ShellQuote("a b") == "'a b'");
  CHECK(ShellQuote("it's") == "'it'\\''s'");
  CHECK(ShellQuote("") == "''");
}

TEST_CASE("Printable keeps printable ASCII and writes every other byte as \\xNN") {
  CHECK(Printable("jobX-1 ok: 'a' \\ b~") == "jobX-1 ok: 'a' \\ b~");
  CHECK(Printable("x\n\x1b[31mdslaunch: all ok") == "x\\x0a\\x1b[31mdslaunch: all ok");
  CHECK(Printable(std::string("a\0b\x7f\xff", 5)) == "a\\x00b\\x7f\\xff");
  CHECK(Printable(Printable("\r\t")) == "\\x0d\\x09");  // idempotent
}
