#include "launcher/report/log_mux.h"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <future>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"

namespace ds {
namespace {

TEST_CASE("log mux: per-rank files get the lines unprefixed, and dslaunch's markers", "[logmux]") {
  testing::TempDir tmp("logmux");
  const std::string& dir = tmp.path();
  FILE* out = std::tmpfile();
  {
    LogMuxOptions o{dir + "/logs", "never", out, false};
    o.err = std::tmpfile();
    LogMux mux(std::move(o));
    REQUIRE(mux.Open().ok());
    mux.AddRank(0, "w0");
    mux.AddRank(1, "w1");
    mux.Line(1, 1, "before");
    mux.Marker("--- dslaunch: restarted, generation 1 ---");
    mux.Line(1, 2, "after");
  }
  CHECK(testing::ReadFile(dir + "/logs/rank1.stdout.log") == "before\n--- dslaunch: restarted, generation 1 ---\n");
  CHECK(testing::ReadFile(dir + "/logs/rank1.stderr.log") == "--- dslaunch: restarted, generation 1 ---\nafter\n");
  CHECK(testing::ReadFile(dir + "/logs/rank0.stdout.log") == "--- dslaunch: restarted, generation 1 ---\n");
  CHECK(testing::ReadStream(out) == "w1:1 before\n");  // markers stay off the terminal; stderr has its own
  std::fclose(out);
}

TEST_CASE("log mux: terminal_local_ranks keeps other local ranks off stdout, never out of the files", "[logmux]") {
  testing::TempDir tmp("logmux");
  const std::string& dir = tmp.path();
  FILE* out = std::tmpfile();
  {
    LogMuxOptions o{dir + "/logs", "never", out, false};
    o.terminal_local_ranks = {0, 2};
    LogMux mux(std::move(o));
    REQUIRE(mux.Open().ok());
    for (int r = 0; r < 3; ++r) mux.AddRank(r, "w0", r);  // w0: local ranks 0-2
    mux.AddRank(3, "w1", 0);
    mux.AddRank(4, "w1", 1);
    mux.AddRank(5, "w1");  // local rank unknown: shown
    for (int r = 0; r < 6; ++r) mux.Line(r, 1, "line " + std::to_string(r));
    // A restart may give a rank another local rank.
    mux.AddRank(4, "w1", 0);
    mux.Line(4, 1, "again 4");
  }
  CHECK(testing::ReadStream(out) == "w0:0 line 0\nw0:2 line 2\nw1:3 line 3\nw1:5 line 5\nw1:4 again 4\n");
  std::fclose(out);
  CHECK(testing::ReadFile(dir + "/logs/rank1.stdout.log") == "line 1\n");
}

TEST_CASE("log mux: plain prefix host:rank when not a TTY; a worker's stderr goes to stderr", "[logmux]") {
  FILE* f = std::tmpfile();
  FILE* e = std::tmpfile();
  LogMuxOptions o{"", "auto", f, false};
  o.err = e;
  LogMux mux(std::move(o));
  mux.AddRank(3, "w1");
  mux.Line(3, 1, "hello");
  mux.Line(3, 2, "  spaced  ");
  mux.Flush();  // the terminal is written by the mux's writer threads
  CHECK(testing::ReadStream(f) == "w1:3 hello\n");
  CHECK(testing::ReadStream(e) == "w1:3   spaced  \n");
  std::fclose(f);
  std::fclose(e);
}

// torchrun's -r: the streams it names (for the local ranks it names) reach
// only the files.
TEST_CASE("log mux: redirects keep those streams of those local ranks off the terminal, in the files", "[logmux]") {
  testing::TempDir tmp("logmux");
  const std::string dir = tmp.path() + "/logs";
  FILE* out = std::tmpfile();
  FILE* err = std::tmpfile();
  {
    LogMuxOptions o{dir, "never", out, false};
    o.err = err;
    o.redirects.by_local_rank = {{0, 2}, {1, 3}};  // local rank 0: stderr; 1: both; 2: none
    LogMux mux(std::move(o));
    REQUIRE(mux.Open().ok());
    for (int r = 0; r < 3; ++r) {
      mux.AddRank(r, "w0", r);
      mux.Line(r, 1, "out " + std::to_string(r));
      mux.Line(r, 2, "err " + std::to_string(r));
    }
  }
  CHECK(testing::ReadStream(out) == "w0:0 out 0\nw0:2 out 2\n");
  CHECK(testing::ReadStream(err) == "w0:2 err 2\n");
  for (int r = 0; r < 3; ++r) {
    CHECK(testing::ReadFile(fmt::format("{}/rank{}.stdout.log", dir, r)) == fmt::format("out {}\n", r));
    CHECK(testing::ReadFile(fmt::format("{}/rank{}.stderr.log", dir, r)) == fmt::format("err {}\n", r));
  }
  std::fclose(out);
  std::fclose(err);
}

TEST_CASE("log mux: colored on a TTY unless DSLAUNCH_COLOR=never; always forces it", "[logmux]") {
  FILE* f = std::tmpfile();
  {
    LogMux mux(LogMuxOptions{"", "auto", f, true});
    mux.AddRank(0, "w0");
    mux.Line(0, 1, "x");
  }
  CHECK(testing::ReadStream(f) == "\033[36mw0:0\033[0m x\n");
  std::fclose(f);
  CHECK(!LogMux(LogMuxOptions{"", "never", stdout, true}).color());
  CHECK(LogMux(LogMuxOptions{"", "always", stdout, false}).color());
}

// A worker's carriage-return updates (tqdm on stderr), drawn in place on a
// terminal: the prefix stays, other lines never land inside the bar.
TEST_CASE("log mux: progress updates redraw one line on a terminal; other lines end it; files get lines only", "[logmux]") {
  testing::TempDir tmp("logmux");
  const std::string dir = tmp.path() + "/logs";
  FILE* out = std::tmpfile();
  FILE* err = std::tmpfile();
  {
    LogMuxOptions o{dir, "never", out, false};
    o.err = err;
    o.err_is_tty = true;
    LogMux mux(std::move(o));
    REQUIRE(mux.Open().ok());
    mux.AddRank(0, "w0");
    mux.AddRank(1, "w0");
    mux.Progress(0, 2, " 10%");
    mux.Progress(0, 2, " 20%");    // redrawn in place
    mux.Progress(1, 2, "r1 5%");   // another rank: the open line ends first
    mux.Line(0, 2, "note");        // a line of another rank ends rank 1's bar
    mux.Progress(0, 2, " 30%");
    mux.Line(0, 2, "100%");        // its own completed line replaces it
    mux.Line(0, 1, "on stdout");   // stdout is no terminal here: a stream of its own
    mux.Progress(0, 1, "dropped");  // off a terminal: dropped
    mux.Progress(1, 2, "left open");
    mux.Flush();                   // ends the open line
  }
  CHECK(testing::ReadStream(err) ==
        "\r\033[Kw0:0  10%"
        "\r\033[Kw0:0  20%"
        "\n\r\033[Kw0:1 r1 5%"
        "\nw0:0 note\n"
        "\r\033[Kw0:0  30%"
        "\r\033[Kw0:0 100%\n"
        "\r\033[Kw0:1 left open\n");
  CHECK(testing::ReadStream(out) == "w0:0 on stdout\n");
  CHECK(testing::ReadFile(dir + "/rank0.stderr.log") == "note\n100%\n");
  CHECK(testing::ReadFile(dir + "/rank0.stdout.log") == "on stdout\n");
  CHECK(testing::ReadFile(dir + "/rank1.stderr.log").empty());
  std::fclose(out);
  std::fclose(err);
}

TEST_CASE("log mux: off a terminal progress updates are dropped; stdout and stderr as one terminal share the open line", "[logmux]") {
  FILE* out = std::tmpfile();
  FILE* err = std::tmpfile();
  {
    LogMuxOptions o{"", "never", out, false};
    o.err = err;
    LogMux mux(std::move(o));
    mux.AddRank(0, "w0");
    mux.Progress(0, 2, "1%");
    mux.Line(0, 2, "100%");
  }
  CHECK(testing::ReadStream(err) == "w0:0 100%\n");
  CHECK(testing::ReadStream(out).empty());
  std::rewind(out);
  std::rewind(err);
  FILE* out2 = std::tmpfile();
  FILE* err2 = std::tmpfile();
  {
    LogMuxOptions o{"", "never", out2, true};
    o.err = err2;
    o.err_is_tty = true;
    LogMux mux(std::move(o));
    mux.AddRank(0, "w0");
    mux.Progress(0, 2, "5%");
    mux.Line(0, 1, "a line on stdout");  // the bar on stderr ends first
    mux.Progress(0, 2, "6%");            // and starts on a line of its own
  }                                      // closing ends it
  CHECK(testing::ReadStream(err2) == "\r\033[Kw0:0 5%\n\r\033[Kw0:0 6%\n");
  CHECK(testing::ReadStream(out2) == "w0:0 a line on stdout\n");
  for (FILE* f : {out, err, out2, err2}) std::fclose(f);
}

// The status line owns the bottom of the terminal: every line erases it, is
// written, and redraws it, in one writer's order; a progress update is a
// whole line above it, redrawn by moving up one line.
TEST_CASE("log mux: the status line stays at the bottom; lines and progress go above it", "[logmux]") {
  FILE* err = std::tmpfile();
  {
    LogMuxOptions o{"", "never", err, true};  // stdout and stderr: one terminal
    o.err = err;
    o.err_is_tty = true;
    o.status_line = true;
    LogMux mux(std::move(o));
    REQUIRE(mux.status_shown());
    mux.AddRank(0, "w0");
    mux.SetStatus("gen 0 ranks 1/1");
    mux.SetStatus("gen 0 ranks 1/1");  // the same text: not drawn again
    mux.Line(0, 1, "hello");            // stdout, the same terminal
    mux.Progress(0, 2, "10%");
    mux.Progress(0, 2, "20%");          // its own line, redrawn above the status line
    mux.Notice("dslaunch: a notice");   // below the bar, which stays as it was
    mux.Flush();                        // erases the status line (the summary follows)
  }
  CHECK(testing::ReadStream(err) ==
        "\r\033[Kgen 0 ranks 1/1"
        "\r\033[Kw0:0 hello\ngen 0 ranks 1/1"
        "\r\033[Kw0:0 10%\ngen 0 ranks 1/1"
        "\r\033[K\033[A\r\033[Kw0:0 20%\ngen 0 ranks 1/1"
        "\r\033[Kdslaunch: a notice\ngen 0 ranks 1/1"
        "\r\033[K");
  std::fclose(err);
}

TEST_CASE("log mux: no status line off a terminal; notices end an open progress line", "[logmux]") {
  FILE* err = std::tmpfile();
  {
    LogMuxOptions o{"", "never", stdout, false};
    o.err = err;
    o.status_line = true;  // asked for, but stderr is no terminal
    LogMux mux(std::move(o));
    CHECK_FALSE(mux.status_shown());
    mux.SetStatus("gen 0");
    mux.AddRank(0, "w0");
    mux.Notice("dslaunch: restarted");
  }
  CHECK(testing::ReadStream(err) == "dslaunch: restarted\n");
  std::fclose(err);
}

// A real pipe nobody reads (`| less`, not scrolled): Line() must return at
// once all the same (it runs on the coordinator's io thread), the file keeps
// every line, and stdout shows one line where lines were dropped.
TEST_CASE("log mux: a stalled reader of stdout never blocks Line(); the files keep every line", "[logmux]") {
  testing::TempDir tmp("logmux");
  const std::string dir = tmp.path() + "/logs";
  int p[2];
  REQUIRE(::pipe(p) == 0);
  FILE* out = ::fdopen(p[1], "w");
  REQUIRE(out);
  LogMuxOptions o{dir, "never", out, false};
  o.terminal_queue_bytes = 1 << 20;
  auto mux = std::make_unique<LogMux>(o);
  REQUIRE(mux->Open().ok());
  mux->AddRank(0, "w0");
  constexpr int kLines = 200000;  // 8 MB: far past the pipe and the queue
  auto line = [](int i) { return fmt::format("line {:06d} of the worker's output.......", i); };
  auto relay = std::async(std::launch::async, [&] {
    for (int i = 0; i < kLines; ++i) mux->Line(0, 1, line(i));
  });
  const bool in_time = relay.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  std::string shown;  // now the reader wakes up and reads everything
  std::thread reader([&] {
    char buf[65536];
    ssize_t n;
    while ((n = ::read(p[0], buf, sizeof(buf))) > 0) shown.append(buf, static_cast<size_t>(n));
  });
  relay.wait();
  CHECK(in_time);
  mux->Flush();
  const uint64_t dropped = mux->dropped_from_terminal();
  mux.reset();
  std::fclose(out);
  reader.join();
  ::close(p[0]);

  std::string expected;
  for (int i = 0; i < kLines; ++i) expected += line(i) + "\n";
  CHECK(testing::ReadFile(dir + "/rank0.stdout.log") == expected);

  CHECK(dropped > 0);
  const std::string notice = fmt::format(
      "dslaunch: {} lines not shown here: the reader of stdout fell behind (every line is in {}/rank<N>.*.log)\n",
      dropped, dir);
  CHECK(shown.find(notice) != std::string::npos);
  size_t worker_lines = 0;
  std::istringstream in(shown);
  for (std::string l; std::getline(in, l);) worker_lines += l.rfind("w0:0 line ", 0) == 0;
  CHECK(worker_lines + dropped == kLines);
}

}  // namespace
}  // namespace ds
