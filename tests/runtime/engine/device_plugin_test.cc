// Which GPU each local rank takes (runtime/engine/device_plugin.h ChooseDevice),
// without a GPU: every rank has its own GPU whatever trainer.device says,
// so backend: nccl with device: cpu does not put every rank on GPU 0.
#include "runtime/engine/device_plugin.h"

#include <catch2/catch.hpp>

namespace ds::rt {
namespace {

TEST_CASE("device choice: backend nccl on the CPU trainer still gives each local rank its own GPU", "[unit]") {
  for (int r = 0; r < 4; ++r) {
    CAPTURE(r);
    auto c = ChooseDevice("cpu", r, 4, {0, 1, 2, 3}, "");
    REQUIRE(c.ok());
    CHECK_FALSE(c->cuda);
    CHECK(c->index == r);
    CHECK(c->description == "cpu");
  }
}

TEST_CASE("device choice: cuda or unset takes LOCAL_RANK modulo the usable GPUs, gaps kept", "[unit]") {
  // GPU 1 skipped by the survey (too old, say): ranks take 0, 2, 3, then 0 again.
  const std::vector<int> gpus{0, 2, 3};
  const int want[] = {0, 2, 3, 0};
  for (int r = 0; r < 4; ++r) {
    auto c = ChooseDevice(r % 2 ? "cuda" : "", r, 4, gpus, "");
    REQUIRE(c.ok());
    CHECK(c->cuda);
    CHECK(c->index == want[r]);
  }
}

TEST_CASE("device choice: the ranks sharing a GPU are counted, so their data set copies are sized together",
          "[unit]") {
  // 5 local ranks on 2 GPUs: ranks 0, 2, 4 on GPU 0; 1, 3 on GPU 1.
  const int want[] = {3, 2, 3, 2, 3};
  for (int r = 0; r < 5; ++r) {
    auto c = ChooseDevice("cuda", r, 5, {0, 1}, "");
    REQUIRE(c.ok());
    CHECK(c->sharing == want[r]);
  }
  auto alone = ChooseDevice("cuda", 1, 4, {0, 1, 2, 3}, "");
  REQUIRE(alone.ok());
  CHECK(alone->sharing == 1);
  // LOCAL_WORLD_SIZE unset (0): the rank itself still counts.
  auto unset = ChooseDevice("cuda", 0, 0, {0}, "");
  REQUIRE(unset.ok());
  CHECK(unset->sharing == 1);
}

TEST_CASE("device choice: no GPU is the CPU quietly, an error for cuda, and no GPU index", "[unit]") {
  auto unset = ChooseDevice("", 1, 2, {}, "no usable GPU: no CUDA driver");
  REQUIRE(unset.ok());
  CHECK_FALSE(unset->cuda);
  CHECK(unset->index == -1);
  auto cpu = ChooseDevice("cpu", 1, 2, {}, "no usable GPU: no CUDA driver");
  REQUIRE(cpu.ok());
  CHECK(cpu->index == -1);
  auto cuda = ChooseDevice("cuda", 0, 2, {}, "no usable GPU: no CUDA driver");
  REQUIRE_FALSE(cuda.ok());
  CHECK(cuda.status().message() ==
        "trainer.device is cuda, but this node has no usable GPU: no CUDA driver; use device: cpu");
}

}  // namespace
}  // namespace ds::rt
