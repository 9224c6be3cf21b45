// Which failed rank the summary names (launcher/report/root_cause.cc), fed
// the way the coordinator feeds the record: output lines and exits in the
// order they arrive. Issue 33 item 3: 1 run in 5 named rank 2, whose Gloo
// "connection closed" is a consequence, and left out rank 3, which raised.
#include "launcher/report/root_cause.h"

#include <signal.h>

#include <catch2/catch.hpp>

#include "launcher/report/job_summary.h"

namespace ds {
namespace {

constexpr int kStderr = 2;

JobRecord FourRanks() {
  JobRecord rec;
  for (int r = 0; r < 4; ++r) {
    rec.OnAssigned(r, r / 2, r < 2 ? "w0" : "w1");
    rec.OnStarted(r, 100 + r);
  }
  return rec;
}

void Raise(JobRecord& rec, int rank, const std::string& error) {
  rec.OnOutput(rank, kStderr, "Traceback (most recent call last):");
  rec.OnOutput(rank, kStderr, "  File \"train.py\", line 9, in <module>");
  rec.OnOutput(rank, kStderr, error);
}

const std::string kClosed =
    "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:4711";

TEST_CASE("root cause: the rank that raised, not the one whose closed connection exited first", "[summary]") {
  JobRecord rec = FourRanks();
  Raise(rec, 3, "ValueError: learning rate 3.5 is too large");
  Raise(rec, 2, kClosed);
  CHECK(rec.OnExited(2, 102, 1, 0, false));  // arrives first: it stops the generation
  CHECK(rec.OnExited(0, 100, 0, SIGTERM, false));
  CHECK(rec.OnExited(1, 101, 0, SIGTERM, false));
  CHECK(rec.OnExited(3, 103, 1, 0, false));
  REQUIRE(rec.first_failure());
  CHECK(rec.first_failure()->rank == 2);
  REQUIRE(rec.RootCause());
  CHECK(rec.RootCause()->rank == 3);
  CHECK(rec.ExitCode() == 1);

  const std::string s = FormatSummary(rec, 4, false);
  INFO(s);
  CHECK(s.find("  host w1, rank 3, pid 103: exited with code 1\n"
               "  root cause: rank 3 (the other 1 failed rank reported a lost connection)\n") != std::string::npos);
  CHECK(s.find("  last 3 lines of rank 3:\n") != std::string::npos);
  CHECK(s.find("  2 ranks failed:\n    host w1, rank 3, pid 103: exited with code 1 at ") != std::string::npos);
  CHECK(s.find("    host w1, rank 2, pid 102: exited with code 1 at ") != std::string::npos);
  CHECK(s.find(" (a lost connection)\n  2 other ranks were stopped by dslaunch\n") != std::string::npos);
  CHECK(s.find("dslaunch: exit code 1\n") != std::string::npos);
}

TEST_CASE("root cause: a host lost after a rank's closed connection is the cause; a signal is not", "[summary]") {
  Failure host;
  host.host = "w1";
  host.what = "agent lost: connection closed by peer";
  host.exit_code = 1;

  JobRecord rec = FourRanks();
  Raise(rec, 0, kClosed);
  CHECK(rec.OnExited(0, 100, 1, 0, false));
  rec.RecordFailure(host);
  REQUIRE(rec.RootCause());
  CHECK(rec.RootCause()->rank == -1);
  CHECK(DescribeFailure(*rec.RootCause()) == "host w1: agent lost: connection closed by peer");

  JobRecord own = FourRanks();  // a rank's own error outranks a host lost later
  Raise(own, 0, "ValueError: learning rate 3.5 is too large");
  CHECK(own.OnExited(0, 100, 1, 0, false));
  own.RecordFailure(host);
  CHECK(own.RootCause()->rank == 0);

  JobRecord interrupted = FourRanks();  // a signal to dslaunch is not a host's loss
  Raise(interrupted, 0, kClosed);
  CHECK(interrupted.OnExited(0, 100, 1, 0, false));
  Failure sig;
  sig.host = "dslaunch";
  sig.signal = 2;
  interrupted.RecordFailure(sig);
  CHECK(interrupted.first_failure()->rank == 0);
}

TEST_CASE("root cause: the first traceback in time outranks an earlier exit, and says it is a guess", "[summary]") {
  JobRecord rec = FourRanks();
  Raise(rec, 1, "ValueError: bad batch");
  rec.OnOutput(0, kStderr, "Segfault-ish noise");
  CHECK(rec.OnExited(0, 100, 7, 0, false));  // its own failure, without a traceback, seen after rank 1's traceback
  CHECK(rec.OnExited(1, 101, 1, 0, false));
  CHECK(rec.OnExited(2, 102, 0, SIGKILL, false));  // the stop, after the grace
  CHECK_FALSE(rec.OnExited(3, 103, 0, 0, false));
  const RootCauseChoice c = ChooseRootCause(rec);
  CHECK(c.cause.rank == 1);
  REQUIRE(c.failed.size() == 2);
  CHECK(c.failed[1]->rank == 0);
  CHECK(c.stopped == 1);
  CHECK(c.cause.cause_note.rfind("a guess: 2 ranks failed for their own reasons, and its traceback reached dslaunch ",
                                 0) == 0);
  CHECK(rec.ExitCode() == 1);
}

TEST_CASE("root cause: ranks that failed the same way need no guess", "[summary]") {
  JobRecord rec = FourRanks();
  for (int r : {1, 0, 3, 2}) {  // a script that is not executable, on every rank
    rec.OnOutput(r, kStderr, "dsagent: cannot run './train.sh': Permission denied");
    rec.OnExited(r, 100 + r, 127, 0, false);
  }
  const RootCauseChoice c = ChooseRootCause(rec);
  CHECK(c.cause.rank == 1);
  CHECK(c.cause.cause_note == "4 ranks failed the same way, so which came first does not matter");
  const std::string s = FormatSummary(rec, 4, false);
  INFO(s);
  // One line for the four, not a root cause line and a list of four alike lines.
  CHECK(c.alike);
  CHECK(s.find("  host w0, rank 1, pid 101: exited with code 127\n"
               "  last 1 line of rank 1:\n"
               "    | dsagent: cannot run './train.sh': Permission denied\n"
               "  4 ranks failed the same way: 0, 1, 2, 3\n"
               "dslaunch: exit code 127\n") != std::string::npos);
  CHECK(s.find("root cause:") == std::string::npos);
  // Another last line, or another exit, is not the same way: the guess stays.
  JobRecord other = FourRanks();
  other.OnOutput(0, kStderr, "ValueError: a");
  other.OnExited(0, 100, 1, 0, false);
  other.OnOutput(1, kStderr, "ValueError: b");
  other.OnExited(1, 101, 1, 0, false);
  CHECK(ChooseRootCause(other).cause.cause_note.rfind("a guess: 2 ranks failed for their own reasons", 0) == 0);
}

TEST_CASE("root cause: one failed rank needs no note; an error file's message decides collateral", "[summary]") {
  JobRecord rec = FourRanks();
  CHECK(rec.OnExited(1, 101, 3, 0, false));
  CHECK(rec.OnExited(0, 100, 0, SIGTERM, false));
  CHECK(ChooseRootCause(rec).cause.cause_note.empty());
  CHECK(FormatSummary(rec, 4, false).find("ranks failed:") == std::string::npos);

  JobRecord files = FourRanks();
  CHECK(files.OnExited(2, 102, 1, 0, false, TorchError{kClosed, ""}));
  CHECK(files.OnExited(3, 103, 1, 0, false, TorchError{"ValueError: boom", ""}));
  CHECK(files.RootCause()->rank == 3);
  CHECK(files.RootCause()->error.message == "ValueError: boom");
}

TEST_CASE("root cause: a hung rank, or one that had raised, is a failure even when the stop ends it", "[summary]") {
  JobRecord rec = FourRanks();
  Raise(rec, 3, "ValueError: raised, then the stop's SIGTERM during its teardown");
  CHECK(rec.OnExited(0, 100, 1, 0, false));
  CHECK(rec.OnExited(1, 101, 0, SIGKILL, true));
  CHECK(rec.OnExited(2, 102, 0, SIGTERM, false));
  CHECK(rec.OnExited(3, 103, 0, SIGTERM, false));
  const RootCauseChoice c = ChooseRootCause(rec);
  CHECK(c.failed.size() == 3);
  CHECK(c.stopped == 1);
  CHECK(c.cause.rank == 3);  // its traceback came before rank 0's exit
}

}  // namespace
}  // namespace ds
