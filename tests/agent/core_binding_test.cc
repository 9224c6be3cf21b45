// agent/core_binding: the CPUs of each local worker, from the core list or
// the node's allowed CPUs, NUMA-ordered, DeepSpeed's slices; errors name the
// CPUs.
#include "agent/core_binding.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

using V = std::vector<int>;
using VV = std::vector<V>;

TEST_CASE("core binding: every allowed CPU shared out, one slice per local rank", "[binding]") {
  CHECK(*PlanCoreBinding("", 2, {0, 1}, {}) == VV{{0}, {1}});
  CHECK(*PlanCoreBinding("", 2, {0, 1, 2, 3, 4}, {}) == VV{{0, 1}, {2, 3}});  // 4 unused
  CHECK(*PlanCoreBinding("", 1, {0, 1, 2}, {}) == VV{{0, 1, 2}});
}

TEST_CASE("core binding: on several NUMA nodes a rank's share stays within one", "[binding]") {
  VV nodes = {{0, 2, 4, 6}, {1, 3, 5, 7}};
  CHECK(*PlanCoreBinding("", 2, {0, 1, 2, 3, 4, 5, 6, 7}, nodes) == VV{{0, 2, 4, 6}, {1, 3, 5, 7}});
  CHECK(*PlanCoreBinding("0-3", 2, {0, 1, 2, 3, 4, 5, 6, 7}, nodes) == VV{{0, 2}, {1, 3}});
}

TEST_CASE("core binding: the core list is used as given when every CPU in it is allowed", "[binding]") {
  V allowed = {0, 1, 2, 3, 8, 9, 10, 11};
  CHECK(*PlanCoreBinding("0-3,8-11", 2, allowed, {}) == VV{{0, 1, 2, 3}, {8, 9, 10, 11}});
  CHECK(*PlanCoreBinding("8-11", 4, allowed, {}) == VV{{8}, {9}, {10}, {11}});
}

TEST_CASE("core binding: CPUs that do not exist or are not allowed, and too few cores, are errors", "[binding]") {
  CHECK(PlanCoreBinding("0-7", 2, {0, 1}, {}).status().message() ==
        "bind_core_list '0-7': CPUs 2-7 do not exist or are not allowed here (allowed: 0-1)");
  CHECK(PlanCoreBinding("1,5", 1, {0, 1}, {}).status().message() ==
        "bind_core_list '1,5': CPU 5 does not exist or is not allowed here (allowed: 0-1)");
  CHECK(PlanCoreBinding("", 4, {0, 1}, {}).status().message() ==
        "2 cores for 4 local ranks: each rank needs at least one core");
  CHECK(PlanCoreBinding("3-1", 1, {0, 1, 2, 3}, {}).status().message() ==
        "bind_core_list '3-1': '3-1': a range must not end below its start; expected a list like 0-3,8-11");
}

}  // namespace
}  // namespace ds
