// Progress's words: steps of the real total, the epochs those steps span,
// and an ETA from this process's own pace (a resumed run's inherited steps
// are not speed). Fake clock; output to a memory stream.
#include "runtime/progress.h"

#include <cstdio>
#include <string>

#include <catch2/catch.hpp>

namespace ds::rt {
namespace {

struct Memory {
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  ~Memory() {
    std::fclose(f);
    std::free(buf);
  }
  std::string str() {
    std::fflush(f);
    return std::string(buf, len);
  }
};

TEST_CASE("max_steps alone: the line says steps of the total and the epochs they span", "[progress]") {
  FakeClock clock;
  Memory m;
  // 3000 steps at 31 steps per epoch: 97 epochs (the last one partial), not 3000.
  Progress p(m.f, {.tty = false, .interval = 1, .total_steps = 3000, .steps_per_epoch = 31}, clock);
  clock.Advance(std::chrono::seconds(10));
  p.Step(31, 0.5, 100);
  CHECK(m.str() == "step 31/3000 epoch 1/97 loss 0.5000 100 samples/s ETA 15m58s\n");  // 2969 left at 31 steps per 10 s
  p.Step(32, 0.25, 100);
  CHECK(m.str().substr(m.str().find('\n') + 1).rfind("step 32/3000 epoch 2/97 loss 0.2500 ", 0) == 0);
}

TEST_CASE("a resumed run's ETA counts only its own steps", "[progress]") {
  FakeClock clock;
  // Resumed at step 900 after a restart: those 900 steps are not this process's speed.
  Progress p(stdout, {.total_steps = 1000, .steps_per_epoch = 100, .start_step = 900}, clock);
  CHECK(std::isnan(p.EtaSeconds(900)));
  clock.Advance(std::chrono::seconds(10));
  CHECK(p.EtaSeconds(910) == Approx(90.0));  // 10 steps in 10 s, 90 left
  CHECK(p.Text(910, 1, 1).find("step 910/1000 epoch 10/10 ") == 0);
  CHECK(p.EtaSeconds(1000) == 0);
}

TEST_CASE("on a terminal the bar is redrawn in place and ended by Finish", "[progress]") {
  FakeClock clock;
  Memory m;
  Progress p(m.f, {.tty = true, .total_steps = 4, .steps_per_epoch = 2}, clock);
  p.Step(2, 1, 8);
  CHECK(m.str() == "\r\033[K[##########----------]  50% step 2/4 epoch 1/2 loss 1.0000 8 samples/s ETA ?");
  p.Finish();
  CHECK(m.str().back() == '\n');
}

TEST_CASE("durations read as a person writes them", "[progress]") {
  CHECK(Progress::FormatDuration(42) == "42s");
  CHECK(Progress::FormatDuration(185) == "3m05s");
  CHECK(Progress::FormatDuration(3720) == "1h02m");
  CHECK(Progress::FormatDuration(NAN) == "?");
}

}  // namespace
}  // namespace ds::rt
