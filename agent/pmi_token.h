// The agent token among the agents MPICH's mpiexec (hydra) started: hydra
// gives stdin to rank 0 only, so rank 0 reads the token there and puts it in
// the job's PMI key-value space, which only the processes of this mpiexec
// run can read; every rank meets at the PMI barrier and the others get it.
// Speaks the PMI-1 wire protocol ("cmd=... key=value\n") on PMI_FD, then
// finalizes: the agent is no MPI process beyond this.
#pragma once

#include <string>

#include "common/status.h"

namespace ds {

// `token` is rank 0's (ignored elsewhere). Errors name the PMI command that
// failed and what the server answered.
Result<std::string> TokenThroughPmi(int pmi_fd, int rank, const std::string& token);

}  // namespace ds
