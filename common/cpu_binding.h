// CPU binding for --bind_cores_to_rank / --bind_core_list (DeepSpeed's
// launcher rule, deepspeed/utils/numa.py): parse a core list such as
// "0-3,8-11", order the cores so that NUMA nodes stay together, and give
// local rank r of n the r-th of n equal slices (floor(cores / n) each; the
// cores left over are unused). The functions above the line are pure; the
// three below read the system (sched_getaffinity, /sys, /proc/driver/nvidia).
// Thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace ds {

// The expected form, for messages: "a list like 0-3,8-11".
extern const char kCoreListForm[];

// Parses DeepSpeed's range list: comma-separated items, each N or A-B (both
// ends included), in ascending order without overlap, no spaces. Error
// names the bad item, e.g. "'3-1': a range must not end below its start".
Result<std::vector<int>> ParseCpuList(const std::string& text);

// The canonical text of a CPU list: sorted runs as "0-3,8" ("" when empty).
std::string FormatCpuList(std::vector<int> cpus);

// `cpus` regrouped by NUMA node: the CPUs of nodes[0] first (in the order of
// `cpus`), then nodes[1]'s, ...; CPUs in no node last. With fewer than two
// nodes that have CPUs, `cpus` unchanged.
std::vector<int> NumaOrder(const std::vector<int>& cpus, const std::vector<std::vector<int>>& nodes);

// Local rank `local_rank` of `local_size`: cores[r*k, (r+1)*k) with
// k = cores.size() / local_size. Error when k is 0: "2 cores for 4 local
// ranks: each rank needs at least one core".
Result<std::vector<int>> CoreSlice(const std::vector<int>& cores, int local_rank, int local_size);

// ---- reading the system ----

// The CPUs this process may run on (sched_getaffinity), ascending.
std::vector<int> AllowedCpus();

// <root>/node<n>/cpulist at index n, for every n up to the highest node
// that has CPUs; a node without CPUs (memory only), or a number the machine
// does not show, is an empty entry. Empty when the machine shows no NUMA
// information.
std::vector<std::vector<int>> NumaNodeCpus(const std::string& root = "/sys/devices/system/node");

// How many /dev/nvidia0, /dev/nvidia1, ... device nodes the machine shows:
// GPUs the driver exposes, counted without loading CUDA (0 without a driver).
int VisibleGpus();

// The NUMA node of each NVIDIA GPU of the node, in PCI bus order (the order
// nvidia-smi numbers them, and CUDA's with CUDA_DEVICE_ORDER=PCI_BUS_ID):
// the entries of `gpus_dir`, named by PCI bus id ("0000:17:00.0"), sorted,
// each looked up as <pci_dir>/<bus id>/numa_node. -1 where that file is
// missing or says -1 (unknown). Empty when there are no GPUs (no driver).
std::vector<int> GpuNumaNodes(const std::string& gpus_dir = "/proc/driver/nvidia/gpus",
                              const std::string& pci_dir = "/sys/bus/pci/devices");

}  // namespace ds
