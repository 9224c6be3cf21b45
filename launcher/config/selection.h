// Host selection with DeepSpeed's --include/--exclude/--num_nodes/--num_gpus
// semantics, implemented as documented:
//   "w0:0,2@w1"  w0 slots 0 and 2, and all of w1
//   "w0"         all of w0's slots
//   --exclude "w0:0@w1"  drops slot 0 of w0 and all of w1; a host left
//                        without slots is dropped
// The result keeps the hostfile's host order with slots ascending; then
// --num_nodes keeps the first N hosts and --num_gpus the first N slots of
// each (asking for more than there are is an error).
// --include and --exclude together, unknown hosts and slots out of range are
// errors. Pure function.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/config/hostfile.h"

namespace ds {

struct SelectionOptions {
  std::string include;   // "" = all
  std::string exclude;   // "" = none
  int num_nodes = -1;    // -1 = all; else the first N hosts (after include/exclude)
  int num_gpus = -1;     // -1 = all; else the first N slots of each host (alias --nproc_per_node)
  // The options as the user typed them, for messages ("--nproc-per-node 8: host ...").
  std::string include_flag = "--include";
  std::string exclude_flag = "--exclude";
  std::string num_nodes_flag = "--num_nodes";
  std::string num_gpus_flag = "--num_gpus";
};

// A selected host and the slot indices (0-based, ascending) it contributes.
struct SelectedHost {
  HostEntry host;
  std::vector<int> slots;
};

Result<std::vector<SelectedHost>> SelectHosts(const Hostfile& hostfile, const SelectionOptions& opts);

}  // namespace ds
