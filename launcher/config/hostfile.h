// Hostfile: DeepSpeed's grammar, one host per line.
//
//   # comment
//   worker-0 slots=4                    # trailing comment
//   worker-1 slots=4 ssh_port=2222 user=ubuntu NCCL_SOCKET_IFNAME=ens1
//   [fe80::1] slots=2
//
// After the host (a name or IPv4 address; IPv6 only in brackets) comes
// slots=N (required, N >= 1), then optional ssh_port=PORT, user=NAME and
// environment variables written in capitals (set for that host's workers;
// dslaunch's own worker variables such as RANK are refused; a value must fit
// one environment string, env_limits.h). Each host once; no NUL bytes.
// OpenMPI's max_slots=N is accepted and ignored, with one notice per file.
//
// Parsing is pure: ParseHostfile never touches the network or the disk
// (LoadHostfile reads the file, then parses). Errors name file:line, show the
// line with a caret under the offending token, and say what was expected.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace ds {

// The most slots one host line and all of them together may give; more is an
// error at the line that passes it (the plan holds a slot per rank).
inline constexpr int kMaxSlotsPerHost = 1 << 20;  // 1048576
inline constexpr int kMaxWorldSize = 1 << 20;     // 1048576, the hostfile's slots summed

struct HostEntry {
  std::string name;              // as written, brackets stripped for IPv6
  int slots = 1;                 // > 0
  int line = 0;                  // 1-based line in the hostfile (0 = synthesized)
  std::optional<int> ssh_port;   // ssh_port=N
  std::string user;              // user=NAME
  std::string addr;              // where the node is reached when not by its name (Slurm's
                                 //   NodeAddr); "" = the name
  std::map<std::string, std::string> env;  // other KEY=VALUE (e.g. NCCL_SOCKET_IFNAME)
};

struct Hostfile {
  std::string path;              // "" when synthesized (local default)
  std::vector<HostEntry> hosts;  // file order
  std::vector<std::string> notices;  // what was accepted but ignored, one line each, e.g.
                                     //   "hf:2: ignoring max_slots=8 (OpenMPI's ...)"; the caller prints them
};

// Parses hostfile text; `path` is used in error messages only.
Result<Hostfile> ParseHostfile(const std::string& text, const std::string& path);

// Reads and parses `path`; a missing or unreadable file is an error (never a
// silent fallback to a local run).
Result<Hostfile> LoadHostfile(const std::string& path);

// The default without --hostfile: the local machine, one slot per GPU where
// GPUs exist, else one per CPU core.
Hostfile LocalHostfile(int cpus, int gpus);

}  // namespace ds
