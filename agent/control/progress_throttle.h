// ProgressThrottle: how often the agent sends a worker stream's progress
// updates (OutputLines, wire_format.md "Output"): at most one per rank and
// stream per `interval` (50 ms by default; tqdm limits itself to 10 a second,
// other programs may not). An update that comes too soon is kept, replacing
// an older kept one, and becomes due when the interval has passed, so the
// newest state is always shown in the end; a complete line of that stream
// drops it (the line replaces the update). Time comes from the caller
// (AgentControl's clock and NextDeadline: no timer of its own). Not
// thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"

namespace ds {

constexpr Clock::duration kProgressInterval = std::chrono::milliseconds(50);

class ProgressThrottle {
 public:
  using TimePoint = Clock::time_point;
  struct Update {
    int rank = 0;
    int stream = 0;
    std::string text;
  };

  explicit ProgressThrottle(Clock::duration interval = kProgressInterval) : interval_(interval) {}

  // An update of `rank`'s `stream` at `now`: true when it may be sent now
  // (counted as sent); false when it is kept until NextDeadline().
  bool Offer(int rank, int stream, const std::string& text, TimePoint now);
  // A complete line of `rank`'s `stream`: its kept update is dropped.
  void Completed(int rank, int stream);
  // The kept updates that are due at `now`, counted as sent.
  std::vector<Update> TakeDue(TimePoint now);
  // When the earliest kept update becomes due; nullopt when none is kept.
  std::optional<TimePoint> NextDeadline() const;
  // A new generation: everything forgotten.
  void Clear() { streams_.clear(); }

 private:
  struct Stream {
    TimePoint last_sent;
    std::optional<std::string> kept;
  };
  const Clock::duration interval_;
  std::map<std::pair<int, int>, Stream> streams_;  // by (rank, stream); an entry once sent
};

}  // namespace ds
