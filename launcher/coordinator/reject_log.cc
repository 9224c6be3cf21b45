#include "launcher/coordinator/reject_log.h"

#include <chrono>

#include <fmt/format.h>

#include "common/log.h"

namespace ds {

void RejectLog::Report(const std::string& reason, const std::string& line) {
  if (!armed_) {
    armed_ = true;
    timer_.expires_after(std::chrono::duration_cast<asio::steady_timer::duration>(
        std::chrono::duration<double>(interval_s_)));
    timer_.async_wait([this](boost::system::error_code ec) {
      if (!ec) EndInterval();
    });
  }
  if (logged_[reason]++ < first_per_reason_) {
    DS_LOG(Warn, Proto) << line;
  } else {
    ++suppressed_[reason];
  }
}

void RejectLog::EndInterval() {
  armed_ = false;
  int total = 0;
  std::string parts;
  for (const auto& [reason, n] : suppressed_) {
    total += n;
    parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", n, reason);
  }
  if (total > 0)
    DS_LOG(Warn, Proto) << fmt::format("{} more connections refused in the last {:g} s, not logged one by one ({})",
                                       total, interval_s_, parts);
  logged_.clear();
  suppressed_.clear();
}

}  // namespace ds
