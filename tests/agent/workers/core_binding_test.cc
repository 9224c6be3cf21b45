// agent/workers/core_binding: the CPUs of each local worker, from the core list or
// the node's allowed CPUs: near each rank's GPU when its NUMA node is known,
// else NUMA-ordered, DeepSpeed's slices; errors name the CPUs.
#include "agent/workers/core_binding.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

using V = std::vector<int>;
using VV = std::vector<V>;

// The cores of a plan that must succeed.
VV Cores(const std::string& core_list, int local_size, const V& allowed, const VV& nodes, const V& gpu_numa = {}) {
  auto planned = PlanCoreBinding(core_list, local_size, allowed, nodes, gpu_numa);
  REQUIRE(planned.ok());
  return planned->cores;
}

std::string Note(const std::string& core_list, int local_size, const V& allowed, const VV& nodes, const V& gpu_numa) {
  auto planned = PlanCoreBinding(core_list, local_size, allowed, nodes, gpu_numa);
  REQUIRE(planned.ok());
  return planned->note;
}

TEST_CASE("core binding: every allowed CPU shared out, one slice per local rank", "[binding]") {
  CHECK(Cores("", 2, {0, 1}, {}) == VV{{0}, {1}});
  CHECK(Cores("", 2, {0, 1, 2, 3, 4}, {}) == VV{{0, 1}, {2, 3}});  // 4 unused
  CHECK(Cores("", 1, {0, 1, 2}, {}) == VV{{0, 1, 2}});
  CHECK(Note("", 2, {0, 1}, {}, {}) == "");
}

TEST_CASE("core binding: on several NUMA nodes a rank's share stays within one", "[binding]") {
  VV nodes = {{0, 2, 4, 6}, {1, 3, 5, 7}};
  CHECK(Cores("", 2, {0, 1, 2, 3, 4, 5, 6, 7}, nodes) == VV{{0, 2, 4, 6}, {1, 3, 5, 7}});
  CHECK(Cores("0-3", 2, {0, 1, 2, 3, 4, 5, 6, 7}, nodes) == VV{{0, 2}, {1, 3}});
  // A memory-only node (no CPUs) between them changes nothing.
  CHECK(Cores("", 2, {0, 1, 2, 3, 4, 5, 6, 7}, {{0, 2, 4, 6}, {}, {1, 3, 5, 7}}) == VV{{0, 2, 4, 6}, {1, 3, 5, 7}});
}

TEST_CASE("core binding: the core list is used as given when every CPU in it is allowed", "[binding]") {
  V allowed = {0, 1, 2, 3, 8, 9, 10, 11};
  CHECK(Cores("0-3,8-11", 2, allowed, {}) == VV{{0, 1, 2, 3}, {8, 9, 10, 11}});
  CHECK(Cores("8-11", 4, allowed, {}) == VV{{8}, {9}, {10}, {11}});
}

TEST_CASE("core binding: CPUs that do not exist or are not allowed, and too few cores, are errors", "[binding]") {
  CHECK(PlanCoreBinding("0-7", 2, {0, 1}, {}, {}).status().message() ==
        "bind_core_list '0-7': CPUs 2-7 do not exist or are not allowed here (allowed: 0-1)");
  CHECK(PlanCoreBinding("1,5", 1, {0, 1}, {}, {}).status().message() ==
        "bind_core_list '1,5': CPU 5 does not exist or is not allowed here (allowed: 0-1)");
  CHECK(PlanCoreBinding("", 4, {0, 1}, {}, {}).status().message() ==
        "2 cores for 4 local ranks: each rank needs at least one core");
  CHECK(PlanCoreBinding("3-1", 1, {0, 1, 2, 3}, {}, {}).status().message() ==
        "bind_core_list '3-1': '3-1': a range must not end below its start; expected a list like 0-3,8-11");
  // The core list is checked before the GPUs are looked at.
  CHECK(PlanCoreBinding("0-7", 2, {0, 1}, {{0}, {1}}, {0, 1}).status().message() ==
        "bind_core_list '0-7': CPUs 2-7 do not exist or are not allowed here (allowed: 0-1)");
}

// Two NUMA nodes of four cores each.
const VV kTwoNodes = {{0, 1, 2, 3}, {4, 5, 6, 7}};
const V kEight = {0, 1, 2, 3, 4, 5, 6, 7};

TEST_CASE("core binding: ranks whose GPUs share a NUMA node split that node's cores", "[binding]") {
  CHECK(Cores("", 4, kEight, kTwoNodes, {0, 0, 1, 1}) == VV{{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  CHECK(Note("", 4, kEight, kTwoNodes, {0, 0, 1, 1}) == "");
  // Interleaved GPUs: each rank still gets cores of its own GPU's node, in rank order.
  CHECK(Cores("", 4, kEight, kTwoNodes, {0, 1, 0, 1}) == VV{{0, 1}, {4, 5}, {2, 3}, {6, 7}});
  // Uneven: node 0 is split three ways (3 unused), node 1 goes whole to its one rank.
  CHECK(Cores("", 4, kEight, kTwoNodes, {0, 0, 0, 1}) == VV{{0}, {1}, {2}, {4, 5, 6, 7}});
  // Without GPUs the same node is sliced as one list: rank 1 would cross nodes.
  CHECK(Cores("", 4, kEight, kTwoNodes) == VV{{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  CHECK(Cores("", 3, kEight, kTwoNodes) == VV{{0, 1}, {2, 3}, {4, 5}});
  CHECK(Cores("", 3, kEight, kTwoNodes, {0, 1, 1}) == VV{{0, 1, 2, 3}, {4, 5}, {6, 7}});
}

TEST_CASE("core binding: a rank goes to its GPU's node, whatever its number", "[binding]") {
  CHECK(Cores("", 2, kEight, kTwoNodes, {1, 0}) == VV{{4, 5, 6, 7}, {0, 1, 2, 3}});
  // Interleaved nodes: the node's own CPUs, not a range.
  CHECK(Cores("", 2, kEight, {{0, 2, 4, 6}, {1, 3, 5, 7}}, {1, 0}) == VV{{1, 3, 5, 7}, {0, 2, 4, 6}});
  // Node numbers with a memory-only node between: node 2 is the second list of CPUs.
  CHECK(Cores("", 2, kEight, {{0, 1, 2, 3}, {}, {4, 5, 6, 7}}, {2, 0}) == VV{{4, 5, 6, 7}, {0, 1, 2, 3}});
}

TEST_CASE("core binding: with GPUs the core list still says which cores may be used", "[binding]") {
  CHECK(Cores("0-1,4-7", 2, kEight, kTwoNodes, {0, 1}) == VV{{0, 1}, {4, 5, 6, 7}});
  CHECK(Cores("2-5", 4, kEight, kTwoNodes, {0, 0, 1, 1}) == VV{{2}, {3}, {4}, {5}});
  CHECK(Cores("", 2, {1, 2, 3, 5}, kTwoNodes, {0, 1}) == VV{{1, 2, 3}, {5}});  // only allowed CPUs
}

TEST_CASE("core binding: an unknown GPU node gives exactly the result without GPUs, with a note", "[binding]") {
  const VV interleaved = {{0, 2, 4, 6}, {1, 3, 5, 7}};
  for (const V& gpus : {V{-1, 0}, V{0, -1}, V{-1, -1}}) {
    CHECK(Cores("", 2, kEight, interleaved, gpus) == Cores("", 2, kEight, interleaved));
    CHECK(Cores("0-3", 2, kEight, interleaved, gpus) == Cores("0-3", 2, kEight, interleaved));
  }
  CHECK(Note("", 2, kEight, interleaved, {0, -1}) ==
        "NUMA node of local rank 1's GPU unknown: binding by equal slices as without GPUs");
  // A node the machine does not show, or one without CPUs.
  CHECK(Cores("", 2, kEight, kTwoNodes, {0, 2}) == VV{{0, 1, 2, 3}, {4, 5, 6, 7}});
  CHECK(Note("", 2, kEight, kTwoNodes, {0, 2}) ==
        "local rank 1's GPU is on NUMA node 2, which shows no CPUs: binding by equal slices as without GPUs");
  CHECK(Note("", 2, kEight, {{0, 1, 2, 3}, {}}, {1, 0}) ==
        "local rank 0's GPU is on NUMA node 1, which shows no CPUs: binding by equal slices as without GPUs");
  CHECK(Note("", 2, kEight, {}, {0, 0}) ==
        "local rank 0's GPU is on NUMA node 0, which shows no CPUs: binding by equal slices as without GPUs");
}

TEST_CASE("core binding: a node with fewer cores than its ranks falls back to the slices", "[binding]") {
  // Node 0 has two cores for three ranks; the four ranks fit in the six cores as one list.
  CHECK(Cores("", 4, {0, 1, 4, 5, 6, 7}, kTwoNodes, {0, 0, 0, 1}) == VV{{0}, {1}, {4}, {5}});
  CHECK(Note("", 4, {0, 1, 4, 5, 6, 7}, kTwoNodes, {0, 0, 0, 1}) ==
        "NUMA node 0 has 2 cores to bind for the 3 local ranks whose GPUs are on it: binding by equal slices as "
        "without GPUs");
  // The core list leaves node 1 nothing.
  CHECK(Cores("0-3", 2, kEight, kTwoNodes, {0, 1}) == VV{{0, 1}, {2, 3}});
  CHECK(Note("0-3", 2, kEight, kTwoNodes, {0, 1}) ==
        "NUMA node 1 has 0 cores to bind for the 1 local rank whose GPU is on it: binding by equal slices as "
        "without GPUs");
  // When the slices do not fit either, the error is theirs.
  CHECK(PlanCoreBinding("", 4, {0, 4}, kTwoNodes, {0, 0, 1, 1}).status().message() ==
        "2 cores for 4 local ranks: each rank needs at least one core");
}

TEST_CASE("core binding: local rank r uses GPU r modulo the GPUs it sees, numbered in PCI order", "[binding]") {
  const V gpu_numa = {0, 0, 1, 1};  // four GPUs in PCI bus order
  using Visible = std::vector<std::optional<std::string>>;
  // CUDA_VISIBLE_DEVICES unset: every GPU of the node.
  CHECK(LocalRankGpuNuma(gpu_numa, Visible(4)) == V{0, 0, 1, 1});
  CHECK(LocalRankGpuNuma(gpu_numa, Visible(6)) == V{0, 0, 1, 1, 0, 0});  // more ranks than GPUs
  CHECK(LocalRankGpuNuma(gpu_numa, Visible(2)) == V{0, 0});
  // dslaunch's list of the node's selected slots (--include host:1,2).
  CHECK(LocalRankGpuNuma(gpu_numa, Visible(2, "1,2")) == V{0, 1});
  CHECK(LocalRankGpuNuma(gpu_numa, Visible(3, "3")) == V{1, 1, 1});
  // Not indices into the node's GPUs: unknown.
  CHECK(LocalRankGpuNuma(gpu_numa, Visible(2, "GPU-5e1b")) == V{-1, -1});
  CHECK(LocalRankGpuNuma(gpu_numa, Visible(2, "0,4")) == V{-1, -1});
  CHECK(LocalRankGpuNuma(gpu_numa, Visible(1, "")) == V{-1});  // no GPU visible
  CHECK(LocalRankGpuNuma(gpu_numa, Visible{"0", std::nullopt, "2"}) == V{0, 0, 1});
  // A node without GPUs: nothing, whatever the variable says.
  CHECK(LocalRankGpuNuma({}, Visible(2, "0,1")).empty());
  CHECK(LocalRankGpuNuma({-1, 1}, Visible(2)) == V{-1, 1});
}

}  // namespace
}  // namespace ds
