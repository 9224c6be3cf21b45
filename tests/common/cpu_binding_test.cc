// common/cpu_binding: DeepSpeed's range lists, NUMA order and the per-rank
// slices; the readers of /sys and /proc against a fake tree.
#include "common/cpu_binding.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

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
  // A node without CPUs (memory only) neither counts nor moves anything.
  CHECK(NumaOrder({0, 1, 2, 3}, {{1, 3}, {}, {0, 2}}) == V{1, 3, 0, 2});
  CHECK(NumaOrder({3, 1, 0, 9}, {{0, 1, 3}, {}}) == V{3, 1, 0, 9});  // one node with CPUs: unchanged
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

// A scratch tree for the readers, removed at the end. Not tests/test_util's
// TempDir: common_tests does not link ds_test_util (tests/common/CMakeLists.txt
// lay outside this change); switch to it once it does.
class FakeRoot {
 public:
  FakeRoot() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "dslaunch-cpu-XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~FakeRoot() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  // Creates `rel` (and its parents) as a directory; returns its path.
  std::string Dir(const std::string& rel) const {
    std::filesystem::create_directories(path_ / rel);
    return (path_ / rel).string();
  }
  // Writes `text` to `rel`, creating its parents.
  void File(const std::string& rel, const std::string& text) const {
    std::filesystem::create_directories((path_ / rel).parent_path());
    std::ofstream(path_ / rel) << text;
  }

 private:
  std::filesystem::path path_;
};

TEST_CASE("cpu binding: the NUMA nodes' CPUs are read at their node numbers", "[cpu]") {
  FakeRoot root;
  const std::string node = root.Dir("node");
  root.File("node/node0/cpulist", "0-3\n");
  root.File("node/node1/cpulist", "\n");  // memory only
  root.File("node/node2/cpulist", "4-5,8\n");
  root.File("node/node3/cpulist", "\n");  // memory only, after the last with CPUs
  root.File("node/possible", "0-3\n");    // not a node
  root.Dir("node/power");
  CHECK(NumaNodeCpus(node) == std::vector<V>{{0, 1, 2, 3}, {}, {4, 5, 8}});
  CHECK(NumaNodeCpus(root.Dir("empty")).empty());
  CHECK(NumaNodeCpus(node + "/missing").empty());
}

TEST_CASE("cpu binding: each GPU's NUMA node, in PCI bus order, -1 where unknown", "[cpu]") {
  FakeRoot root;
  const std::string gpus = root.Dir("proc/driver/nvidia/gpus");
  const std::string pci = root.Dir("sys/bus/pci/devices");
  // Created out of order; bus 0x17 < 0x2a < 0x65 < 0xb1 < 0xca; domain 0001 last.
  for (const char* id : {"0000:ca:00.0", "0000:17:00.0", "0001:05:00.0", "0000:65:00.0", "0000:2a:00.0",
                         "0000:b1:00.0"})
    root.Dir(std::string("proc/driver/nvidia/gpus/") + id);
  root.File("sys/bus/pci/devices/0000:17:00.0/numa_node", "0\n");
  root.File("sys/bus/pci/devices/0000:2a:00.0/numa_node", "0\n");
  root.File("sys/bus/pci/devices/0000:65:00.0/numa_node", "-1\n");  // the firmware does not say
  root.File("sys/bus/pci/devices/0000:b1:00.0/numa_node", "1\n");
  root.File("sys/bus/pci/devices/0000:ca:00.0/numa_node", "3\n");
  // 0001:05:00.0 has no numa_node file.
  CHECK(GpuNumaNodes(gpus, pci) == V{0, 0, -1, 1, 3, -1});
  root.File("sys/bus/pci/devices/0000:17:00.0/numa_node", "junk\n");
  CHECK(GpuNumaNodes(gpus, pci) == V{-1, 0, -1, 1, 3, -1});
  CHECK(GpuNumaNodes(root.Dir("no-gpus"), pci).empty());
  CHECK(GpuNumaNodes(gpus + "/missing", pci).empty());  // no driver
}

}  // namespace
}  // namespace ds
