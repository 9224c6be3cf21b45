// RaiseFdLimit: makes room for `needed` open file descriptors in this
// process (RLIMIT_NOFILE). A coordinator holds one connection per agent and
// one per worker's store client, so a job of thousands of nodes needs more
// than the usual soft limit of 1,024. The soft limit is raised to `needed`
// (never lowered); past the hard limit, the hard limit too when the process
// may (CAP_SYS_RESOURCE, up to /proc/sys/fs/nr_open). Error when it cannot:
//   "needs 40000 open files for <what>; the limit is 20000 (hard 20000) and
//    cannot be raised: ...; raise it with `ulimit -n 40000` ..."
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace ds {

// `what` names the reason in the error ("16384 agents' connections").
Status RaiseFdLimit(uint64_t needed, const std::string& what);
// The current soft limit.
uint64_t FdLimit();

}  // namespace ds
