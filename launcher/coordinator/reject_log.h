// RejectLog: the coordinator's warnings about connections it refuses or
// drops (bad frames, wrong secret, handshake timeout, over the limit),
// rate-limited so that a flood of hostile connections cannot flood dslaunch's
// stderr: per interval, the first `first_per_reason` lines of each reason are
// logged in full, the rest only counted, and one summary line at the end of
// the interval names the counts. Lines must already be Printable().
// Not thread-safe: the coordinator's io thread only.
#pragma once

#include <map>
#include <string>

#include "common/asio.h"

namespace ds {

class RejectLog {
 public:
  RejectLog(asio::io_context& io, double interval_s, int first_per_reason = 3)
      : timer_(io), interval_s_(interval_s), first_per_reason_(first_per_reason) {}
  ~RejectLog() { timer_.cancel(); }

  // Logs `line` (a PROTO warning) or counts it under `reason` for the summary.
  void Report(const std::string& reason, const std::string& line);

 private:
  void EndInterval();

  asio::steady_timer timer_;
  double interval_s_;
  int first_per_reason_;
  bool armed_ = false;
  std::map<std::string, int> logged_;      // this interval, per reason
  std::map<std::string, int> suppressed_;  // this interval, per reason
};

}  // namespace ds
