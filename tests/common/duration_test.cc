#include "common/duration.h"

#include <cstdint>
#include <limits>

#include <catch2/catch.hpp>

namespace ds {
namespace {

TEST_CASE("ToMillis rounds up and saturates, never wraps or truncates to 0") {
  CHECK(ToMillis(0.25) == 250);
  CHECK(ToMillis(0.3) == 300);
  CHECK(ToMillis(0.0001) == 1);  // heartbeat_interval: 0.0001s used to become 0 ms
  CHECK(ToMillis(0) == 0);
  CHECK(ToMillis(-1) == 0);
  CHECK(ToMillis(1e300) == std::numeric_limits<int64_t>::max());
  CHECK(ToMillis32(4294968.0) == std::numeric_limits<uint32_t>::max());  // used to wrap to 704 ms
  CHECK(ToMillis32(4294967.295) == 4294967295u);
  CHECK(ToMillis32(1.0) == 1000u);
}

TEST_CASE("duration ranges: what they allow and how messages write them") {
  CHECK(InRange(0, kHangTimeoutRange));
  CHECK_FALSE(InRange(0.05, kHangTimeoutRange));
  CHECK_FALSE(InRange(4294968, kHangTimeoutRange));
  CHECK_FALSE(InRange(0, kHeartbeatIntervalRange));
  CHECK(InRange(0, kHostCooldownRange));
  CHECK(RangeText(kHangTimeoutRange) == "0 (off) or a duration between 100ms and 168h");
  CHECK(RangeText(kHeartbeatIntervalRange) == "a duration between 10ms and 1h");
  CHECK(FormatDuration(1.5) == "1.5s");
  CHECK(FormatDuration(120) == "2m");
  CHECK(FormatDuration(0.0001) == "0.0001s");
  // Every range's maximum fits the wire's uint32 milliseconds.
  for (const DurationRange& r : {kHeartbeatIntervalRange, kHeartbeatTimeoutRange, kHangTimeoutRange,
                                 kHostCooldownRange, kConnectTimeoutRange, kStopGraceRange,
                                 kCollectiveTimeoutRange})
    CHECK(r.max * 1000 < std::numeric_limits<uint32_t>::max());
}

}  // namespace
}  // namespace ds
