#include "launcher/coordinator/reshape_round.h"

#include <fmt/format.h>

namespace ds {

std::string ReshapeRound::DoneLine(Clock::time_point now) const {
  const double ms = std::chrono::duration<double, std::milli>(now - began_).count();
  return fmt::format("recovered in place at step {} in {:.0f} ms: {}", step_, ms, sources_);
}

std::string ReshapeRound::LateReason(const std::vector<std::string>& names, double budget_seconds) const {
  if (!owed_.empty()) return fmt::format("{} did not answer within {:g} s", names.at(*owed_.begin()), budget_seconds);
  if (!starting_.empty()) return fmt::format("rank {} did not start within {:g} s", *starting_.begin(), budget_seconds);
  return "";
}

}  // namespace ds
