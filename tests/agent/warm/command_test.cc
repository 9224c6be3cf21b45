// agent/warm/command: which worker commands a warm spare can run, when a
// spare may take the next generation's assignment, and the memory threshold.
#include "agent/warm/command.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

using Words = std::vector<std::string>;

TEST_CASE("warm: a Python script or -m module splits into interpreter and target", "[warm]") {
  auto c = SplitPythonCommand({"python3", "-u", "train.py", "--lr", "0.1"});
  REQUIRE(c);
  CHECK(c->interpreter == Words{"python3", "-u"});
  CHECK(c->target == Words{"train.py", "--lr", "0.1"});
  c = SplitPythonCommand({"/usr/bin/python3.11", "-uB", "-X", "faulthandler", "-Wignore", "-m", "pkg.train", "x"});
  REQUIRE(c);
  CHECK(c->interpreter == Words{"/usr/bin/python3.11", "-uB", "-X", "faulthandler", "-Wignore"});
  CHECK(c->target == Words{"-m", "pkg.train", "x"});
  c = SplitPythonCommand({"python", "t.py"});
  REQUIRE(c);
  CHECK(c->interpreter == Words{"python"});
}

TEST_CASE("warm: anything else is not a spare's: other programs, -c, stdin, unknown flags", "[warm]") {
  for (const Words& argv : {Words{}, Words{"/bin/sh", "-c", "python3 t.py"}, Words{"dstrain"},
                            Words{"python3", "-c", "print(1)"}, Words{"python3", "-"}, Words{"python3"},
                            Words{"python3", "-u"}, Words{"python3", "-m"}, Words{"python3", "--check-hash-based-pycs", "x", "t.py"},
                            Words{"python3.x", "t.py"}, Words{"python2", "t.py"}, Words{"mypython3", "t.py"}})
    CHECK_FALSE(SplitPythonCommand(argv));
}

TEST_CASE("warm: a spare takes an assignment that differs only in the per-generation variables", "[warm]") {
  SpareStart started{{"python3", "-u"},
                     {{"RANK", "1"}, {"MASTER_PORT", "29500"}, {"DSLAUNCH_GENERATION", "0"}, {"PATH", "/usr/bin"},
                      {"TORCHELASTIC_RESTART_COUNT", "0"}, {"CUDA_VISIBLE_DEVICES", "1"}},
                     "/work",
                     {2, 3}};
  SpareStart next = started;
  next.env = {{"RANK", "0"}, {"MASTER_PORT", "29611"}, {"DSLAUNCH_GENERATION", "1"}, {"PATH", "/usr/bin"},
              {"TORCHELASTIC_RESTART_COUNT", "1"}, {"CUDA_VISIBLE_DEVICES", "0"}, {"DSLAUNCH_RESUME_STEP", "40"}};
  CHECK(SpareMismatch(started, next) == "");
  SpareStart other = next;
  other.env.emplace_back("PYTHONPATH", "/opt/x");
  CHECK(SpareMismatch(started, other) == "PYTHONPATH differs");
  other = next;
  other.env[3].second = "/opt/bin";
  CHECK(SpareMismatch(started, other) == "PATH differs");
  other = next;
  other.env.emplace_back("OMP_NUM_THREADS", "4");  // read by OpenMP when torch loads it
  CHECK(SpareMismatch(started, other) == "OMP_NUM_THREADS differs");
  other = next;
  other.env.erase(other.env.begin() + 3);
  CHECK(SpareMismatch(started, other) == "PATH differs");
  other = next;
  other.cpus = {0, 1};
  CHECK(SpareMismatch(started, other) == "the cores differ");
  other = next;
  other.working_dir = "/tmp";
  CHECK(SpareMismatch(started, other) == "the working directory differs");
  other = next;
  other.interpreter = {"python3"};
  CHECK(SpareMismatch(started, other) == "the interpreter differs ('python3 -u' then, 'python3' now)");
}

TEST_CASE("warm: MemAvailable from /proc/meminfo and the documented threshold", "[warm]") {
  CHECK(MemAvailableKiB("MemTotal:       32000000 kB\nMemFree:  100 kB\nMemAvailable:   22366672 kB\n") == 22366672u);
  CHECK_FALSE(MemAvailableKiB("MemTotal:       32000000 kB\n"));
  CHECK_FALSE(MemAvailableKiB("MemAvailable: lots\n"));
  CHECK(SparesDoNotFit(4u << 20, 2) == "");  // 2 GiB + 2 x 1 GiB
  CHECK(SparesDoNotFit((4u << 20) - 1, 2) ==
        "MemAvailable is 4095 MiB, below the 4096 MiB that 2 spare(s) need (2 GiB + 1 GiB each)");
  CHECK(SparesDoNotFit(0, 1) == "MemAvailable is 0 MiB, below the 3072 MiB that 1 spare(s) need (2 GiB + 1 GiB each)");
}

}  // namespace
}  // namespace ds
