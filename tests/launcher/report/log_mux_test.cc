#include "launcher/report/log_mux.h"

#include <catch2/catch.hpp>

#include <cstdio>

#include "tests/test_util/temp_dir.h"

namespace ds {
namespace {

std::string Captured(FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[256];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
  return out;
}

TEST_CASE("log mux: per-rank files get the lines unprefixed, and dslaunch's markers", "[logmux]") {
  testing::TempDir tmp("logmux");
  const std::string& dir = tmp.path();
  FILE* out = std::tmpfile();
  {
    LogMux mux({dir + "/logs", "never", out, false});
    REQUIRE(mux.Open().ok());
    mux.AddRank(0, "w0");
    mux.AddRank(1, "w1");
    mux.Line(1, 1, "before");
    mux.Marker("--- dslaunch: restarted, generation 1 ---");
    mux.Line(1, 2, "after");
  }
  FILE* f = std::fopen((dir + "/logs/rank1.log").c_str(), "r");
  REQUIRE(f);
  CHECK(Captured(f) == "before\n--- dslaunch: restarted, generation 1 ---\nafter\n");
  std::fclose(f);
  f = std::fopen((dir + "/logs/rank0.log").c_str(), "r");
  REQUIRE(f);
  CHECK(Captured(f) == "--- dslaunch: restarted, generation 1 ---\n");
  std::fclose(f);
  CHECK(Captured(out) == "w1:1 before\nw1:1 after\n");  // markers stay off stdout
  std::fclose(out);
}

TEST_CASE("log mux: plain prefix host:rank when not a TTY", "[logmux]") {
  FILE* f = std::tmpfile();
  LogMux mux(LogMuxOptions{"", "auto", f, false});
  mux.AddRank(3, "w1");
  mux.Line(3, 1, "hello");
  mux.Line(3, 2, "  spaced  ");
  CHECK(Captured(f) == "w1:3 hello\nw1:3   spaced  \n");
  std::fclose(f);
}

TEST_CASE("log mux: colored on a TTY unless DSLAUNCH_COLOR=never; always forces it", "[logmux]") {
  FILE* f = std::tmpfile();
  {
    LogMux mux(LogMuxOptions{"", "auto", f, true});
    mux.AddRank(0, "w0");
    mux.Line(0, 1, "x");
  }
  CHECK(Captured(f) == "\033[36mw0:0\033[0m x\n");
  std::fclose(f);
  CHECK(!LogMux(LogMuxOptions{"", "never", stdout, true}).color());
  CHECK(LogMux(LogMuxOptions{"", "always", stdout, false}).color());
}

}  // namespace
}  // namespace ds
