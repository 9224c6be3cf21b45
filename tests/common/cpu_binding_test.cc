// The pure half of common/cpu_binding: DeepSpeed's range lists, NUMA order
// and the per-rank slices.
#include "common/cpu_binding.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

using V = std::vector<int>;

TEST_CASE("cpu list: DeepSpeed's range list parses", "[cpu]") {
  CHECK(*ParseCpuList("0") == V{0});
  CHECK(*ParseCpuList("0-3,8-11") == V{0, 1, 2, 3, 8, 9, 10, 11});
  CHECK(*ParseCpuList("0,2-4,6") == V{0, 2, 3, 4, 6});
  CHECK(*ParseCpuList("5-5") == V{5});
}

TEST_CASE("cpu list: errors name the item and what was wrong", "[cpu]") {
  auto msg = [](const std::string& s) { return ParseCpuList(s).status().message(); };
  CHECK(msg("3-1") == "'3-1': a range must not end below its start");
  CHECK(msg("x") == "'x': expected a CPU number or a range A-B");
  CHECK(msg("") == "the list is empty");
  CHECK(msg("0,,1") == "'': expected a CPU number or a range A-B");
  CHECK(msg("0, 1") == "' 1': expected a CPU number or a range A-B");
  CHECK(msg("1-2-3") == "'1-2-3': expected a CPU number or a range A-B");
  CHECK(msg("-1") == "'-1': expected a CPU number or a range A-B");
  CHECK(msg("4,2") == "'2': items must be in ascending order without overlap");
  CHECK(msg("0-3,3-5") == "'3-5': items must be in ascending order without overlap");
  CHECK(msg("0-99999999") == "'0-99999999': expected a CPU number or a range A-B");
}

TEST_CASE("cpu list: formatting folds runs", "[cpu]") {
  CHECK(FormatCpuList({}) == "");
  CHECK(FormatCpuList({3}) == "3");
  CHECK(FormatCpuList({8, 0, 1, 2, 3, 9, 11}) == "0-3,8-9,11");
}

TEST_CASE("cpu binding: NUMA order keeps each node's CPUs together", "[cpu]") {
  // Interleaved nodes (node 0 = even CPUs, node 1 = odd ones).
  std::vector<V> nodes = {{0, 2, 4, 6}, {1, 3, 5, 7}};
  CHECK(NumaOrder({0, 1, 2, 3, 4, 5, 6, 7}, nodes) == V{0, 2, 4, 6, 1, 3, 5, 7});
  CHECK(NumaOrder({1, 2, 3, 9}, nodes) == V{2, 1, 3, 9});  // 9 is in no node: last
  CHECK(NumaOrder({3, 1, 0}, {{0, 1, 3}}) == V{3, 1, 0});  // one node: unchanged
  CHECK(NumaOrder({3, 1, 0}, {}) == V{3, 1, 0});
}

TEST_CASE("cpu binding: rank r of n gets the r-th of n equal slices; leftovers unused", "[cpu]") {
  V cores = {0, 1, 2, 3, 8, 9, 10, 11};
  CHECK(*CoreSlice(cores, 0, 2) == V{0, 1, 2, 3});
  CHECK(*CoreSlice(cores, 1, 2) == V{8, 9, 10, 11});
  CHECK(*CoreSlice(cores, 2, 3) == V{8, 9});  // 8 / 3 = 2 each; 10 and 11 unused (DeepSpeed)
  CHECK(*CoreSlice({0, 1}, 1, 2) == V{1});
}

TEST_CASE("cpu binding: fewer cores than ranks is an error saying so", "[cpu]") {
  CHECK(CoreSlice({0, 1}, 0, 4).status().message() == "2 cores for 4 local ranks: each rank needs at least one core");
  CHECK(CoreSlice({}, 0, 1).status().message() == "0 cores for 1 local ranks: each rank needs at least one core");
  CHECK(!CoreSlice({0, 1}, 2, 2).ok());
}

TEST_CASE("cpu binding: this process may run on at least one CPU", "[cpu]") {
  V mine = AllowedCpus();
  REQUIRE(!mine.empty());
  CHECK(std::is_sorted(mine.begin(), mine.end()));
}

}  // namespace
}  // namespace ds
