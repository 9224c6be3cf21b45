#include "common/duration.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace ds {

bool InRange(double seconds, const DurationRange& r) {
  if (seconds == 0 && r.zero_is_off) return true;
  return seconds >= r.min && seconds <= r.max;
}

std::string RangeText(const DurationRange& r) {
  return fmt::format("{}a duration between {} and {}", r.zero_is_off ? "0 (off) or " : "",
                     FormatDuration(r.min), FormatDuration(r.max));
}

std::string FormatDuration(double s) {
  if (s == 0) return "0s";
  for (auto [unit, scale] : {std::pair{"h", 3600.0}, std::pair{"m", 60.0}, std::pair{"s", 1.0}})
    if (s >= scale && std::fmod(s, scale) == 0) return fmt::format("{}{}", s / scale, unit);
  if (s < 1 && std::fmod(s * 1000, 1.0) == 0) return fmt::format("{}ms", s * 1000);
  return fmt::format("{}s", s);
}

namespace {

template <typename T>
T CeilMillis(double seconds) {
  if (!(seconds > 0)) return 0;  // also NaN
  // Up to a whole ms, forgiving binary noise (0.3 s * 1000 is 300.00000000000006).
  const double ms = std::max(1.0, std::ceil(seconds * 1000 - 1e-6));
  const double max = static_cast<double>(std::numeric_limits<T>::max());
  return ms >= max ? std::numeric_limits<T>::max() : static_cast<T>(ms);
}

}  // namespace

int64_t ToMillis(double seconds) { return CeilMillis<int64_t>(seconds); }
uint32_t ToMillis32(double seconds) { return CeilMillis<uint32_t>(seconds); }

}  // namespace ds
