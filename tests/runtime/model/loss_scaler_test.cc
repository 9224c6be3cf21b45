// DeepSpeed dynamic loss scaling: skip on overflow, hysteresis, growth after
// a window of good steps, floor at min_loss_scale; static scaling.
#include "runtime/model/loss_scaler.h"

#include <catch2/catch.hpp>

using namespace ds::rt;

TEST_CASE("dynamic loss scale: hysteresis, halving, regrowth") {
  LossScalerConfig c;
  c.initial_scale_power = 16;
  c.window = 3;
  c.hysteresis = 2;
  LossScaler s(c);
  CHECK(s.scale() == 65536.0);
  CHECK(s.Update(true));            // absorbed by hysteresis, still skipped
  CHECK(s.scale() == 65536.0);
  CHECK(s.Update(true));            // halves
  CHECK(s.scale() == 32768.0);
  CHECK_FALSE(s.Update(false));
  CHECK_FALSE(s.Update(false));
  CHECK(s.scale() == 32768.0);
  CHECK_FALSE(s.Update(false));     // 3 good steps since the overflow
  CHECK(s.scale() == 65536.0);
  CHECK(s.state().cur_hysteresis == 2);
}

TEST_CASE("dynamic loss scale grows after window good steps from the start") {
  LossScalerConfig c;
  c.initial_scale_power = 4;
  c.window = 2;
  LossScaler s(c);
  s.Update(false);
  CHECK(s.scale() == 16.0);
  s.Update(false);
  CHECK(s.scale() == 32.0);
}

TEST_CASE("dynamic loss scale never goes below min_loss_scale; state round-trips") {
  LossScalerConfig c;
  c.initial_scale_power = 2;
  c.hysteresis = 1;
  c.min_scale = 2;
  LossScaler s(c);
  for (int i = 0; i < 5; ++i) CHECK(s.Update(true));
  CHECK(s.scale() == 2.0);
  LossScaler t(c);
  t.Restore(s.state());
  CHECK(t.scale() == 2.0);
  CHECK(t.state().cur_iter == 5);
  CHECK(t.state().last_overflow_iter == 4);
}

TEST_CASE("static loss scale skips overflow steps but never changes") {
  LossScalerConfig c;
  c.dynamic = false;
  c.static_scale = 128;
  LossScaler s(c);
  CHECK(s.Update(true));
  CHECK_FALSE(s.Update(false));
  CHECK(s.scale() == 128.0);
}
