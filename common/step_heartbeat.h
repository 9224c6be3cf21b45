// StepHeartbeat: a worker tells its local agent "I finished step N" so the
// agent can tell a hung worker from a slow one (hang_timeout). Sends one
// small UDP datagram to DSLAUNCH_HEARTBEAT_ADDR per Beat(); never blocks and
// never fails the caller (a lost datagram only delays hang detection).
// Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace ds {

class StepHeartbeat {
 public:
  // From DSLAUNCH_HEARTBEAT_ADDR and RANK; a no-op object when unset.
  static std::unique_ptr<StepHeartbeat> FromEnv();
  virtual ~StepHeartbeat() = default;
  virtual void Beat(int64_t step) = 0;
};

}  // namespace ds
