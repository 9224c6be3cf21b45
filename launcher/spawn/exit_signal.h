// Waiting on and raising the "agent has ended" fd that AgentHandle::exit_fd()
// returns: WaitReadable blocks on any such fd (a pidfd or an eventfd) with a
// timeout instead of a sleep loop; MakeExitEvent/RaiseExitEvent are the
// eventfd side for handles whose end is seen by a reader thread. All
// functions are safe from any thread.
#pragma once

#include "common/status.h"
#include "common/unique_fd.h"

namespace ds {

// Polls `fd` for POLLIN for at most `seconds` (EINTR retried with the time
// left). True if it became readable, false on timeout or a poll error.
bool WaitReadable(int fd, double seconds);

// A non-blocking, close-on-exec eventfd, not yet raised. IOError if the
// process is out of fds.
Result<UniqueFd> MakeExitEvent();

// Makes `fd` (from MakeExitEvent) readable for good. Idempotent.
void RaiseExitEvent(int fd);

}  // namespace ds
