// Optimizers against hand-computed reference steps (numbers worked out by
// hand from the update rules in optimizer.h; see the comments).
#include "runtime/model/optimizer.h"

#include <catch2/catch.hpp>

#include <vector>

using namespace ds::rt;

namespace {

// Runs `steps` updates of one parameter starting at p0 with gradients g[i].
std::vector<float> Run(const OptimizerConfig& c, float p0, const std::vector<float>& g, float lr) {
  auto opt = MakeOptimizer(c);
  std::vector<std::vector<float>> state(opt->state_slots(), std::vector<float>(1, 0.0f));
  std::vector<float*> ptrs;
  for (auto& s : state) ptrs.push_back(s.data());
  float p = p0;
  std::vector<float> out;
  for (size_t i = 0; i < g.size(); ++i) {
    opt->Step(&p, &g[i], ptrs.data(), 1, static_cast<int64_t>(i) + 1, lr);
    out.push_back(p);
  }
  return out;
}

}  // namespace

TEST_CASE("SGD without momentum: p -= lr * (g + wd p)") {
  OptimizerConfig c;
  c.type = OptimizerType::kSgd;
  c.weight_decay = 0.1;
  CHECK(MakeOptimizer(c)->state_slots() == 0);
  // p = 1 - 0.1 * (0.5 + 0.1) = 0.94
  CHECK(Run(c, 1.0f, {0.5f}, 0.1f)[0] == Approx(0.94f));
}

TEST_CASE("SGD with momentum: first step buf = g, then buf = m buf + g") {
  OptimizerConfig c;
  c.type = OptimizerType::kSgd;
  c.momentum = 0.9;
  auto p = Run(c, 1.0f, {0.5f, 0.5f}, 0.1f);
  CHECK(p[0] == Approx(0.95f));   // buf 0.5
  CHECK(p[1] == Approx(0.855f));  // buf 0.9*0.5 + 0.5 = 0.95
  c.nesterov = true;
  p = Run(c, 1.0f, {0.5f, 0.5f}, 0.1f);
  CHECK(p[0] == Approx(0.905f));   // u = 0.5 + 0.9*0.5 = 0.95
  CHECK(p[1] == Approx(0.7695f));  // buf 0.95, u = 0.5 + 0.855 = 1.355
  c.nesterov = false;
  c.dampening = 0.5;
  p = Run(c, 1.0f, {0.5f, 0.5f}, 0.1f);
  CHECK(p[1] == Approx(0.95f - 0.07f));  // buf 0.9*0.5 + 0.5*0.5 = 0.7
}

TEST_CASE("Adam: bias-corrected steps") {
  OptimizerConfig c;
  c.type = OptimizerType::kAdam;
  c.adam_w_mode = false;
  auto p = Run(c, 1.0f, {0.5f, 0.25f}, 0.1f);
  // step 1: m=0.05 v=0.00025, m^=0.5 sqrt(v^)=0.5 -> p = 1 - 0.1 = 0.9
  CHECK(p[0] == Approx(0.9f).epsilon(1e-6));
  // step 2: m=0.07 v=0.00031225, bc1=0.19 bc2=0.001999,
  // m^=0.3684211 sqrt(v^)=0.3952254 -> p = 0.9 - 0.0932182 = 0.8067818
  CHECK(p[1] == Approx(0.8067818f).epsilon(1e-5));
  CHECK(MakeOptimizer(c)->state_slots() == 2);
}

TEST_CASE("Adam weight decay: L2 (adam_w_mode false) vs decoupled (AdamW, DeepSpeed default)") {
  OptimizerConfig c;
  c.type = OptimizerType::kAdam;
  c.weight_decay = 0.1;
  c.adam_w_mode = false;
  // g' = 0.5 + 0.1 = 0.6, normalized step still 1 -> p = 0.9
  CHECK(Run(c, 1.0f, {0.5f}, 0.1f)[0] == Approx(0.9f).epsilon(1e-6));
  c.adam_w_mode = true;  // p = 1 * (1 - 0.1*0.1) - 0.1 = 0.89
  CHECK(Run(c, 1.0f, {0.5f}, 0.1f)[0] == Approx(0.89f).epsilon(1e-6));
  c.type = OptimizerType::kAdamW;
  c.adam_w_mode = false;  // AdamW forces decoupled decay
  CHECK(Run(c, 1.0f, {0.5f}, 0.1f)[0] == Approx(0.89f).epsilon(1e-6));
}

TEST_CASE("Adam without bias correction") {
  OptimizerConfig c;
  c.type = OptimizerType::kAdamW;
  c.bias_correction = false;
  // m=0.05, sqrt(v)=0.0158114 -> p = 1 - 0.1*0.05/0.0158114 = 0.6837722
  CHECK(Run(c, 1.0f, {0.5f}, 0.1f)[0] == Approx(0.6837722f).epsilon(1e-5));
}

TEST_CASE("a shard update equals the slice of a full update") {
  OptimizerConfig c;
  auto opt = MakeOptimizer(c);
  std::vector<float> p(10), g(10);
  for (int i = 0; i < 10; ++i) {
    p[i] = 0.1f * i;
    g[i] = 0.3f - 0.05f * i;
  }
  std::vector<float> m(10, 0), v(10, 0);
  std::vector<float> p2 = p, m2(10, 0), v2(10, 0);
  float* st[] = {m.data(), v.data()};
  opt->Step(p.data(), g.data(), st, 10, 1, 0.01f);
  float* s1[] = {m2.data(), v2.data()};
  float* s2[] = {m2.data() + 4, v2.data() + 4};
  opt->Step(p2.data(), g.data(), s1, 4, 1, 0.01f);
  opt->Step(p2.data() + 4, g.data() + 4, s2, 6, 1, 0.01f);
  CHECK(p == p2);
}

TEST_CASE("optimizers: grad_scale multiplies every gradient first (unscale and clip, fused)") {
  for (OptimizerType t : {OptimizerType::kSgd, OptimizerType::kAdam, OptimizerType::kAdamW}) {
    OptimizerConfig c;
    c.type = t;
    c.momentum = 0.9;
    c.weight_decay = 0.01;
    auto opt = MakeOptimizer(c);
    std::vector<float> p1 = {0.5f, -1.0f, 2.0f}, p2 = p1;
    const std::vector<float> g = {0.25f, -0.5f, 1.0f}, g8 = {2.0f, -4.0f, 8.0f};
    std::vector<std::vector<float>> s1(opt->state_slots(), std::vector<float>(3)), s2 = s1;
    std::vector<float*> q1, q2;
    for (auto& s : s1) q1.push_back(s.data());
    for (auto& s : s2) q2.push_back(s.data());
    for (int64_t step = 1; step <= 3; ++step) {
      opt->Step(p1.data(), g.data(), q1.data(), 3, step, 0.1f);
      opt->Step(p2.data(), g8.data(), q2.data(), 3, step, 0.1f, 0.125f);
    }
    CHECK(p1 == p2);
    CHECK(s1 == s2);
  }
}
