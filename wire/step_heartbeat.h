// StepHeartbeat: a worker tells its local agent "I finished step N" so the
// agent can tell a hung worker from a slow one (hang_timeout). Sends one
// small UDP datagram to DSLAUNCH_HEARTBEAT_ADDR per Beat(); never blocks and
// never fails the caller (a lost datagram only delays hang detection).
// Each datagram carries the worker's private DSLAUNCH_HEARTBEAT_TOKEN (set by
// the agent, one per worker and generation); the agent ignores a datagram
// whose token is not that rank's, so anyone else who can reach the port can
// neither arm nor feed a worker's hang check. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace ds {

// The datagram (wire_format.md "Step heartbeats"): big-endian i64 rank, i64
// step, then the token's kStepBeatTokenChars ASCII characters.
constexpr size_t kStepBeatTokenChars = 32;  // 16 random bytes, hex
constexpr size_t kStepBeatSize = 16 + kStepBeatTokenChars;

struct StepBeat {
  int64_t rank = 0;
  int64_t step = 0;
  std::string token;
};

// The datagram for `beat` (its token is sent as is, even when empty or of
// the wrong length: the agent then ignores it).
std::string EncodeStepBeat(const StepBeat& beat);
// nullopt unless exactly kStepBeatSize bytes.
std::optional<StepBeat> DecodeStepBeat(const uint8_t* data, size_t size);

class StepHeartbeat {
 public:
  // From DSLAUNCH_HEARTBEAT_ADDR, DSLAUNCH_HEARTBEAT_TOKEN and RANK; a no-op
  // object when the address is unset.
  static std::unique_ptr<StepHeartbeat> FromEnv();
  virtual ~StepHeartbeat() = default;
  virtual void Beat(int64_t step) = 0;
};

}  // namespace ds
