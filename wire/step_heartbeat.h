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
#include <limits>
#include <memory>
#include <optional>
#include <string>

namespace ds {

// The datagram (wire_format.md "Step heartbeats"): big-endian i64 rank, i64
// step, then the token's kStepBeatTokenChars ASCII characters (the short
// form, what PyTorch scripts send per docs/usage.md); the long form adds i64
// compute microseconds and i64 samples of that step (-1: unknown); the save
// form adds i64 microseconds the worker stalled in its last snapshot save
// (sent with the first beat after a save); the metric form adds, after the
// save form's field (-1: no save since), the worker's training loss and
// evaluation accuracy as IEEE-754 f64 (NaN: not said with this beat), which
// dslaunch keeps per rank for `status --json` and the report's curves.
constexpr size_t kStepBeatTokenChars = 32;  // 16 random bytes, hex
constexpr size_t kStepBeatSize = 16 + kStepBeatTokenChars;
constexpr size_t kStepBeatLongSize = kStepBeatSize + 16;
constexpr size_t kStepBeatSaveSize = kStepBeatLongSize + 8;
constexpr size_t kStepBeatMetricSize = kStepBeatSaveSize + 16;

struct StepBeat {
  int64_t rank = 0;
  int64_t step = 0;
  std::string token;
  int64_t compute_micros = -1;  // the step's time in compute (between collectives); -1: unknown
  int64_t samples = -1;         // samples this rank processed in the step; -1: unknown
  int64_t save_stall_micros = -1;  // its last save's stall, said once after the save; -1: none since
  double loss = kNoMetric;      // the training loss at `step` (any scalar the worker calls its loss); NaN: not said
  double accuracy = kNoMetric;  // an evaluation's accuracy at `step`, 0..1; NaN: not said
  static constexpr double kNoMetric = std::numeric_limits<double>::quiet_NaN();
  bool HasMetric() const { return loss == loss || accuracy == accuracy; }
};

// The long-form datagram for `beat`, the save form when it carries a stall,
// the metric form when it carries a loss or an accuracy (its token is sent as
// is, even when empty or of the wrong length: the agent then ignores it).
std::string EncodeStepBeat(const StepBeat& beat);
// nullopt unless exactly kStepBeatSize (short form: compute and samples
// unknown), kStepBeatLongSize, kStepBeatSaveSize or kStepBeatMetricSize
// bytes. An infinite loss or accuracy reads as not said.
std::optional<StepBeat> DecodeStepBeat(const uint8_t* data, size_t size);

// What a worker can say of a step besides its number.
struct StepCost {
  double compute_seconds = -1;  // <0: unknown
  int64_t samples = -1;         // <0: unknown
  double save_stall_seconds = -1;  // the worker's stall in a save since its last beat; <0: none
  double loss = StepBeat::kNoMetric;      // NaN: not said with this beat
  double accuracy = StepBeat::kNoMetric;  // NaN: not said with this beat
};

class StepHeartbeat {
 public:
  // From DSLAUNCH_HEARTBEAT_ADDR, DSLAUNCH_HEARTBEAT_TOKEN and RANK; a no-op
  // object when the address is unset.
  static std::unique_ptr<StepHeartbeat> FromEnv();
  virtual ~StepHeartbeat() = default;
  void Beat(int64_t step) { Beat(step, StepCost{}); }
  virtual void Beat(int64_t step, const StepCost& cost) = 0;
};

}  // namespace ds
