// The per-element math shared by the CPU loops and the CUDA kernels
// (runtime/numeric/elementwise.h): values against references (PyTorch's
// GELU, hand-worked optimizer steps), derivatives against finite
// differences. These always run: they are the CPU side of the device math.
#include "runtime/numeric/elementwise.h"

#include <catch2/catch.hpp>

namespace ds::rt::ew {
namespace {

TEST_CASE("elementwise: ReLU and its backward", "[elementwise]") {
  CHECK(Relu(2.5f) == 2.5f);
  CHECK(Relu(-1.0f) == 0.0f);
  CHECK(Relu(0.0f) == 0.0f);
  CHECK(ReluBackward(Relu(3.0f), 0.7f) == 0.7f);
  CHECK(ReluBackward(Relu(-3.0f), 0.7f) == 0.0f);
}

TEST_CASE("elementwise: GELU matches torch (erf form) and its derivative finite differences", "[elementwise]") {
  // torch.nn.functional.gelu(torch.tensor([-2., -0.5, 0., 1., 3.]))
  CHECK(Gelu(-2.0f) == Approx(-0.0455003f).margin(1e-6));
  CHECK(Gelu(-0.5f) == Approx(-0.1542688f).margin(1e-6));
  CHECK(Gelu(0.0f) == 0.0f);
  CHECK(Gelu(1.0f) == Approx(0.8413447f).margin(1e-6));
  CHECK(Gelu(3.0f) == Approx(2.9959502f).margin(1e-6));
  CHECK(GeluGrad(0.0f) == Approx(0.5f));
  for (float x : {-3.0f, -1.0f, -0.25f, 0.3f, 1.5f, 4.0f}) {
    const double h = 1e-3;
    const double fd = (Gelu(static_cast<float>(x + h)) - Gelu(static_cast<float>(x - h))) / (2 * h);
    CHECK(GeluGrad(x) == Approx(fd).margin(2e-3));
  }
}

TEST_CASE("elementwise: one Adam step, L2 and decoupled decay", "[elementwise]") {
  // Step 1, lr 0.1, b1 0.9, b2 0.999, eps 1e-8, bias correction:
  // step_size = lr / (1 - b1) = 1, inv_sqrt_bc2 = 1 / sqrt(1 - b2).
  AdamStep s{0.9f, 0.999f, 1e-8f, 0.0f, 1.0f, 0.1f / 0.1f, 1.0f / std::sqrt(0.001f)};
  float p = 1.0f, m = 0.0f, v = 0.0f;
  Adam(p, 0.5f, m, v, s);
  CHECK(m == Approx(0.05f));
  CHECK(v == Approx(0.00025f).epsilon(1e-4));
  CHECK(p == Approx(1.0f - 0.1f).epsilon(1e-4));  // m_hat / sqrt(v_hat) = 1: p -= lr
  // AdamW: p *= 1 - lr*wd first (wd 0.5, lr 0.1: 0.95), the gradient untouched.
  s.decay = 0.95f;
  p = 1.0f, m = 0.0f, v = 0.0f;
  Adam(p, 0.5f, m, v, s);
  CHECK(p == Approx(0.95f - 0.1f).epsilon(1e-4));
  // Adam with L2: the gradient gets wd * p (0.5 + 0.5 * 1 = 1.0) before the moments.
  s.decay = 1.0f;
  s.l2 = 0.5f;
  p = 1.0f, m = 0.0f, v = 0.0f;
  Adam(p, 0.5f, m, v, s);
  CHECK(m == Approx(0.1f));
  CHECK(v == Approx(0.001f).epsilon(1e-4));
}

TEST_CASE("elementwise: SGD, with momentum and Nesterov", "[elementwise]") {
  float p = 1.0f;
  Sgd(p, 0.5f, 0.1f, 0.1f);  // 1 - 0.1 * (0.5 + 0.1)
  CHECK(p == Approx(0.94f));
  SgdStep s{0.1f, 0.0f, 0.9f, 1.0f, true, false};
  float buf = 0.0f;
  p = 1.0f;
  SgdMomentum(p, 0.5f, buf, s);  // first step: buf = g
  CHECK(buf == Approx(0.5f));
  CHECK(p == Approx(0.95f));
  s.first = false;
  SgdMomentum(p, 0.5f, buf, s);  // buf = 0.9 * 0.5 + 0.5 = 0.95
  CHECK(buf == Approx(0.95f));
  CHECK(p == Approx(0.95f - 0.095f));
  s.nesterov = true;
  SgdMomentum(p, 0.5f, buf, s);  // buf = 0.9 * 0.95 + 0.5 = 1.355; p -= lr * (g + 0.9 * buf)
  CHECK(buf == Approx(1.355f));
  CHECK(p == Approx(0.855f - 0.1f * (0.5f + 0.9f * 1.355f)));
}

}  // namespace
}  // namespace ds::rt::ew
