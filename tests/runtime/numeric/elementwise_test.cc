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
  AdamStep s{0.9f, 0.999f, 1e-8f, 0.0f, 1.0f, 0.1f / 0.1f, 1.0f / std::sqrt(0.001f), 1.0f};
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
  Sgd(p, 0.5f, SgdStep{0.1f, 0.1f, 0.0f, 1.0f, 1.0f, true, false});  // 1 - 0.1 * (0.5 + 0.1)
  CHECK(p == Approx(0.94f));
  SgdStep s{0.1f, 0.0f, 0.9f, 1.0f, 1.0f, true, false};
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

TEST_CASE("elementwise: gscale (unscale and clip) is applied to the gradient first", "[elementwise]") {
  // A gradient of 4 with gscale 0.125 updates exactly as a gradient of 0.5.
  AdamStep a{0.9f, 0.999f, 1e-8f, 0.01f, 0.99f, 0.3f, 2.0f, 1.0f};
  float p1 = 1.5f, m1 = 0.1f, v1 = 0.2f, p2 = p1, m2 = m1, v2 = v1;
  Adam(p1, 0.5f, m1, v1, a);
  a.gscale = 0.125f;
  Adam(p2, 4.0f, m2, v2, a);
  CHECK(p1 == p2);
  CHECK(m1 == m2);
  CHECK(v1 == v2);
  SgdStep s{0.1f, 0.01f, 0.9f, 1.0f, 1.0f, false, true};
  float q1 = 1.5f, b1 = 0.3f, q2 = q1, b2 = b1;
  SgdMomentum(q1, 0.5f, b1, s);
  s.gscale = 0.125f;
  SgdMomentum(q2, 4.0f, b2, s);
  CHECK(q1 == q2);
  CHECK(b1 == b2);
  float r1 = 2.0f, r2 = 2.0f;
  Sgd(r1, 0.5f, SgdStep{0.1f, 0.01f, 0.0f, 1.0f, 1.0f, false, false});
  Sgd(r2, 4.0f, SgdStep{0.1f, 0.01f, 0.0f, 1.0f, 0.125f, false, false});
  CHECK(r1 == r2);
}

TEST_CASE("elementwise: softmax cross-entropy of one sample, its gradient and argmax", "[elementwise]") {
  // torch.nn.functional.cross_entropy(torch.tensor([[1., 2., 0.5]]), torch.tensor([1])) = 0.4643688
  const float z[3] = {1.0f, 2.0f, 0.5f};
  float d[3];
  bool correct = false;
  const double loss = SoftmaxXent(z, 3, 1, 2.0f, d, &correct);
  CHECK(loss == Approx(0.4643688).epsilon(1e-6));
  CHECK(correct);
  // softmax(z) = [0.2312239, 0.6285317, 0.1402444]; d = 2 * (softmax - onehot(1)).
  CHECK(d[0] == Approx(2 * 0.2312239f).epsilon(1e-5));
  CHECK(d[1] == Approx(2 * (0.6285317f - 1)).epsilon(1e-5));
  CHECK(d[2] == Approx(2 * 0.1402444f).epsilon(1e-5));
  CHECK(d[0] + d[1] + d[2] == Approx(0.0f).margin(1e-6));
  // Wrong label: the loss grows, not correct; without d nothing is written.
  CHECK(SoftmaxXent(z, 3, 2, 1.0f, nullptr, &correct) == Approx(1.9643688).epsilon(1e-6));
  CHECK_FALSE(correct);
  // Ties: the first maximum is the prediction (torch.argmax's rule).
  const float tie[3] = {3.0f, 3.0f, 1.0f};
  SoftmaxXent(tie, 3, 1, 1.0f, nullptr, &correct);
  CHECK_FALSE(correct);
  SoftmaxXent(tie, 3, 0, 1.0f, nullptr, &correct);
  CHECK(correct);
  // Stable for large logits: no overflow to inf.
  const float big[2] = {1000.0f, 0.0f};
  CHECK(SoftmaxXent(big, 2, 1, 1.0f, d, &correct) == Approx(1000.0).epsilon(1e-9));
  CHECK(d[0] == Approx(1.0f));
  CHECK(d[1] == Approx(-1.0f));
}

}  // namespace
}  // namespace ds::rt::ew
