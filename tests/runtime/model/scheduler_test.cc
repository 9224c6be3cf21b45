// DeepSpeed learning-rate schedules against hand-computed values.
#include "runtime/model/scheduler.h"

#include <catch2/catch.hpp>

using namespace ds::rt;

TEST_CASE("WarmupLR log and linear") {
  SchedulerConfig c;
  c.type = SchedulerType::kWarmupLR;
  c.warmup_min_lr = 0;
  c.warmup_max_lr = 0.01;
  c.warmup_num_steps = 10;
  CHECK(LearningRate(c, 99, 0) == 0.0);
  CHECK(LearningRate(c, 99, 1) == Approx(0.0030103));  // 0.01 * ln 2 / ln 10
  CHECK(LearningRate(c, 99, 9) == Approx(0.01));
  CHECK(LearningRate(c, 99, 500) == Approx(0.01));
  c.warmup_type = "linear";
  c.warmup_min_lr = 0.001;
  CHECK(LearningRate(c, 99, 5) == Approx(0.0055));  // 0.001 + 0.009 * 5/10
  c.warmup_num_steps = 1;  // DeepSpeed takes max(2, W)
  CHECK(LearningRate(c, 99, 1) == Approx(0.0055));
}

TEST_CASE("WarmupDecayLR decays linearly to 0 at total_num_steps") {
  SchedulerConfig c;
  c.type = SchedulerType::kWarmupDecayLR;
  c.warmup_max_lr = 0.01;
  c.warmup_num_steps = 10;
  c.total_num_steps = 20;
  CHECK(LearningRate(c, 99, 10) == Approx(0.01));
  CHECK(LearningRate(c, 99, 15) == Approx(0.005));  // (20-15)/(20-10)
  CHECK(LearningRate(c, 99, 20) == 0.0);
  CHECK(LearningRate(c, 99, 25) == 0.0);
}

TEST_CASE("WarmupCosineLR scales the optimizer lr") {
  SchedulerConfig c;
  c.type = SchedulerType::kWarmupCosineLR;
  c.warmup_num_steps = 10;
  c.total_num_steps = 20;
  c.warmup_type = "linear";
  c.warmup_min_ratio = 0.1;
  CHECK(LearningRate(c, 0.1, 0) == Approx(0.01));
  CHECK(LearningRate(c, 0.1, 5) == Approx(0.055));  // 0.1 + 0.9 * 0.5
  // it 10: (1 + cos(pi/10))/2 = 0.9755283; 0.0001 + 0.9999 * that = 0.9755307
  CHECK(LearningRate(c, 0.1, 10) == Approx(0.09755307));
  CHECK(LearningRate(c, 0.1, 19) == Approx(0.1 * 0.0001));
  CHECK(LearningRate(c, 0.1, 40) == Approx(0.1 * 0.0001));  // clamped, no rise
}

TEST_CASE("no scheduler: the optimizer lr") {
  CHECK(LearningRate(SchedulerConfig{}, 0.003, 1234) == 0.003);
  CHECK(std::string(SchedulerTypeName(SchedulerType::kWarmupDecayLR)) == "WarmupDecayLR");
}
