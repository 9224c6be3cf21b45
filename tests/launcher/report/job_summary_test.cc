#include "launcher/report/job_summary.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

TEST_CASE("summary: first failure with signal name and last lines", "[summary]") {
  JobRecord rec;
  rec.OnAssigned(0, 0, "w0");
  rec.OnAssigned(1, 1, "w1");
  rec.OnStarted(1, 4242);
  for (int i = 0; i < 25; ++i) rec.OnOutput(1, 1, "line " + std::to_string(i));
  CHECK(rec.OnExited(1, 4242, 0, 9, false));
  CHECK(rec.OnExited(0, 77, 3, 0, false));  // later: not the first failure
  REQUIRE(rec.first_failure());
  CHECK(rec.ExitCode() == 137);
  std::string s = FormatSummary(rec, 2, false);
  CHECK(s.find("  host w1, rank 1, pid 4242: killed by signal 9 (SIGKILL)\n") != std::string::npos);
  CHECK(s.find("  last 20 lines of rank 1:\n    | line 5\n") != std::string::npos);
  CHECK(s.find("line 4\n") == std::string::npos);
  CHECK(s.find("dslaunch: exit code 137\n") != std::string::npos);
}

TEST_CASE("summary: success and non-worker failures", "[summary]") {
  JobRecord ok;
  ok.OnAssigned(0, 0, "w0");
  CHECK(!ok.OnExited(0, 1, 0, 0, false));
  CHECK(ok.AllExitedOk());
  CHECK(FormatSummary(ok, 1, false) == "dslaunch: all 1 workers exited 0\n");

  JobRecord lost;
  Failure f;
  f.host = "w2";
  f.what = "agent lost: no heartbeat for 5s";
  f.exit_code = 1;
  lost.RecordFailure(f);
  std::string s = FormatSummary(lost, 4, false);
  CHECK(s.find("  host w2: agent lost: no heartbeat for 5s\n") != std::string::npos);
  CHECK(lost.ExitCode() == 1);
  CHECK(SignalName(15) == "SIGTERM");
  CHECK(SignalName(63) == "SIG63");
}

TEST_CASE("summary: Ctrl-C is a stop, not a failed job", "[summary]") {
  JobRecord stopped;
  Failure f;
  f.signal = 2;
  stopped.RecordFailure(f);
  const std::string s = FormatSummary(stopped, 4, false);
  CHECK(s.rfind("dslaunch: stopped by SIGINT at ", 0) == 0);
  CHECK(s.find("job failed") == std::string::npos);
  CHECK(s.find("  dslaunch received SIGINT; every worker was stopped\n") != std::string::npos);
  CHECK(s.find("dslaunch: exit code 130\n") != std::string::npos);
}

TEST_CASE("summary: elastic restarts keep their causes; the last generation decides", "[summary]") {
  JobRecord rec;
  rec.OnAssigned(0, 0, "w0");
  rec.OnAssigned(1, 1, "w1");
  CHECK(rec.OnExited(1, 4242, 3, 0, false));
  rec.NewGeneration(1);  // a clean slate, the failure kept as its cause
  CHECK(!rec.first_failure());
  CHECK(rec.workers().empty());
  CHECK(rec.ExitCode() == 0);
  REQUIRE(rec.restart_causes().size() == 1);
  CHECK(DescribeFailure(rec.restart_causes()[0]) == "host w1, rank 1, pid 4242: exited with code 3");

  rec.OnAssigned(0, 0, "w0");
  CHECK(!rec.OnExited(0, 51, 0, 0, false));
  CHECK(rec.AllExitedOk());
  std::string s = FormatSummary(rec, 1, false);
  CHECK(s.rfind("dslaunch: all 1 workers exited 0, after 1 restart\n  restart 1 after a failure at ", 0) == 0);
  CHECK(s.find(" UTC: host w1, rank 1, pid 4242: exited with code 3\n") != std::string::npos);

  // A second restart whose generation then fails: its failure decides.
  Failure lost;
  lost.host = "w0";
  lost.what = "agent lost: connection closed by peer";
  lost.exit_code = 1;
  rec.RecordFailure(lost);
  rec.NewGeneration(2);
  rec.OnAssigned(0, 0, "w0");
  CHECK(rec.OnExited(0, 52, 0, 15, false));
  CHECK(rec.ExitCode() == 143);
  s = FormatSummary(rec, 1, false);
  CHECK(s.find("  host w0, rank 0, pid 52: killed by signal 15 (SIGTERM)\n") != std::string::npos);
  CHECK(s.find("  that was generation 2; before it:\n  restart 1 after a failure at ") != std::string::npos);
  CHECK(s.find("  restart 2 after a failure at ") != std::string::npos);
  CHECK(s.find(" UTC: host w0: agent lost: connection closed by peer\n") != std::string::npos);
  CHECK(s.find("dslaunch: exit code 143\n") != std::string::npos);
}

TEST_CASE("summary: the failing rank's own error message and innermost frames; exit code unchanged",
          "[summary]") {
  JobRecord rec;
  rec.OnAssigned(0, 0, "w0");
  rec.OnAssigned(1, 0, "w0");
  rec.OnStarted(1, 4242);
  rec.OnOutput(1, 2, "ValueError: boom");
  TorchError err;
  err.message = "ValueError: boom\nsecond line";
  err.traceback =
      "Traceback (most recent call last):\n"
      "  File \"/work/train.py\", line 40, in <module>\n"
      "    main()\n"
      "  File \"/work/train.py\", line 31, in main\n"
      "    step(model)\n"
      "  File \"/work/model.py\", line 7, in forward\n"
      "    return self.w @ x\n"
      "  File \"/work/train.py\", line 12, in step\n"
      "    raise ValueError(\"boom\")\n"
      "ValueError: boom\n";
  CHECK(rec.OnExited(1, 4242, 1, 0, false, err));
  CHECK(rec.ExitCode() == 1);
  std::string s = FormatSummary(rec, 2, false);
  const std::string expected =
      "  host w0, rank 1, pid 4242: exited with code 1\n"
      "  rank 1 error: ValueError: boom\n"
      "    second line\n"
      "  innermost 3 frames of its traceback:\n"
      "    File \"/work/train.py\", line 31, in main\n"
      "      step(model)\n"
      "    File \"/work/model.py\", line 7, in forward\n"
      "      return self.w @ x\n"
      "    File \"/work/train.py\", line 12, in step\n"
      "      raise ValueError(\"boom\")\n"
      "  last 1 line of rank 1:\n"
      "    | ValueError: boom\n"
      "dslaunch: exit code 1\n";
  INFO(s);
  REQUIRE(s.size() > expected.size());
  CHECK(s.substr(s.size() - expected.size()) == expected);
}

TEST_CASE("summary: an error report of a rank that exited 0 is not kept; a restart cause names its message",
          "[summary]") {
  JobRecord rec;
  rec.OnAssigned(0, 0, "w0");
  CHECK(!rec.OnExited(0, 5, 0, 0, false, TorchError{"E: stale", ""}));
  CHECK(rec.workers().at(0).error.message.empty());
  rec.OnAssigned(1, 0, "w0");
  CHECK(rec.OnExited(1, 6, 2, 0, false, TorchError{"KeyError: 'lr'", ""}));
  rec.NewGeneration(1);
  rec.OnAssigned(0, 0, "w0");
  CHECK(!rec.OnExited(0, 7, 0, 0, false));
  std::string s = FormatSummary(rec, 1, false);
  CHECK(s.find("rank 1, pid 6: exited with code 2 (KeyError: 'lr')\n") != std::string::npos);
}

}  // namespace
}  // namespace ds
