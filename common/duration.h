// Durations as dslaunch reads and sends them: seconds (a double, what the job
// file, the command line and DSLAUNCH_* write) checked against one documented
// range per setting where they are read (docs/usage.md, "Durations"), and the
// only conversions to integer milliseconds: they round up (a positive
// duration never becomes 0 ms) and saturate (a large one never wraps). The
// ranges keep every duration sent on the wire (uint32 ms, protocol.h) exact.
// Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace ds {

struct DurationRange {
  double min = 0;            // seconds, inclusive
  double max = 0;            // seconds, inclusive
  bool zero_is_off = false;  // 0 is accepted besides [min, max] and means "off"
};

// One range per setting; the maxima fit a uint32 millisecond counter (49.7 days).
inline constexpr DurationRange kHeartbeatIntervalRange{0.01, 3600};      // 10ms .. 1h
inline constexpr DurationRange kHeartbeatTimeoutRange{0.01, 86400};      // 10ms .. 24h
inline constexpr DurationRange kHangTimeoutRange{0.1, 604800, true};     // 0 = off, 100ms .. 168h
inline constexpr DurationRange kHostCooldownRange{0, 604800};            // 0 .. 168h
inline constexpr DurationRange kSlowWindowRange{0.1, 3600};              // 100ms .. 1h
inline constexpr DurationRange kConnectTimeoutRange{0.01, 3600};         // 10ms .. 1h
inline constexpr DurationRange kStopGraceRange{0, 3600};                 // 0 .. 1h
inline constexpr DurationRange kCollectiveTimeoutRange{0.01, 86400};     // 10ms .. 24h

// True when `seconds` lies in `r` (or is 0 and r.zero_is_off).
bool InRange(double seconds, const DurationRange& r);

// What `r` allows, for messages: "a duration between 10ms and 1h",
// "0 (off) or a duration between 100ms and 168h".
std::string RangeText(const DurationRange& r);

// A duration as written back to the user or to dsagent: "10ms", "1.5s", "2m",
// "168h" (the largest unit that keeps it a whole number, else seconds).
std::string FormatDuration(double seconds);

// Whole milliseconds, rounded up, saturating at the type's maximum; 0 for
// values <= 0 and NaN.
int64_t ToMillis(double seconds);
uint32_t ToMillis32(double seconds);

}  // namespace ds
