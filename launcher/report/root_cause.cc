#include "launcher/report/root_cause.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/check.h"

namespace ds {
namespace {

// What collectives say when a peer is gone (Gloo's tcp pair, NCCL's watchdog, sockets).
constexpr const char* kCollateral[] = {
    "Connection closed by peer", "Connection reset by peer", "Broken pipe",
    "NCCL communicator was aborted", "remote process exited",
};

bool MentionsCollateral(const std::string& text) {
  for (const char* c : kCollateral)
    if (text.find(c) != std::string::npos) return true;
  return false;
}

// When its failure began as dslaunch saw it: its first traceback line, else its exit.
uint64_t FirstSign(const WorkerRecord& w) { return w.traceback_seq != 0 ? w.traceback_seq : w.end_seq; }

double SecondsBetween(std::chrono::system_clock::time_point a, std::chrono::system_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::chrono::system_clock::time_point FirstSignTime(const WorkerRecord& w) {
  return w.traceback_seq != 0 ? w.traceback_time : w.end_time;
}

std::string LastLine(const WorkerRecord& w) { return w.last_lines.empty() ? "" : w.last_lines.back(); }

// The first `n` of `failed` ended alike: the same exit code or signal, hung
// or not, and the same last line (a script that is not executable, on every
// rank). Which of them reached dslaunch first then does not matter.
bool Alike(const std::vector<const WorkerRecord*>& failed, size_t n) {
  const WorkerRecord& a = *failed[0];
  for (size_t i = 1; i < n; ++i) {
    const WorkerRecord& w = *failed[i];
    if (w.exit_code != a.exit_code || w.signal != a.signal || w.hung != a.hung || LastLine(w) != LastLine(a))
      return false;
  }
  return true;
}

std::string HowChosen(const std::vector<const WorkerRecord*>& failed, size_t collateral) {
  const WorkerRecord& c = *failed[0];
  const char* sign = c.traceback_seq != 0 ? "its traceback" : "its exit";
  const size_t own = failed.size() - collateral;
  if (own == 1)
    return fmt::format("the other {} failed rank{} reported a lost connection", collateral,
                       collateral == 1 ? "" : "s");
  if (own == 0)
    return fmt::format("a guess: every failed rank reported a lost connection, and {} reached dslaunch first", sign);
  if (Alike(failed, own))
    return fmt::format("{} ranks failed the same way{}, so which came first does not matter", own,
                       collateral == 0 ? "" : fmt::format(" and {} reported a lost connection", collateral));
  const WorkerRecord& next = *failed[1];
  return fmt::format("a guess: {} ranks failed for their own reasons, and {} reached dslaunch {:.3f} s before rank "
                     "{}'s; that order crosses pipes and hosts, so read every failed rank below",
                     own, sign, SecondsBetween(FirstSignTime(c), FirstSignTime(next)), next.rank);
}

}  // namespace

bool IsCollateralError(const WorkerRecord& w) {
  if (!w.error.message.empty()) return MentionsCollateral(w.error.message);
  const size_t tail = std::min<size_t>(w.last_lines.size(), 5);
  return std::any_of(w.last_lines.end() - static_cast<std::ptrdiff_t>(tail), w.last_lines.end(), MentionsCollateral);
}

RootCauseChoice ChooseRootCause(const JobRecord& record) {
  RootCauseChoice out;
  for (const auto& [rank, w] : record.workers()) {
    if (w.stopped) ++out.stopped;
    if (w.FailedOnItsOwn()) out.failed.push_back(&w);
  }
  DS_CHECK(!out.failed.empty());
  auto key = [](const WorkerRecord* w) { return std::make_pair(IsCollateralError(*w), FirstSign(*w)); };
  std::stable_sort(out.failed.begin(), out.failed.end(),
                   [&](const WorkerRecord* a, const WorkerRecord* b) { return key(a) < key(b); });
  const size_t collateral = static_cast<size_t>(
      std::count_if(out.failed.begin(), out.failed.end(), [](const WorkerRecord* w) { return IsCollateralError(*w); }));
  out.cause = FailureOf(*out.failed[0]);
  if (out.failed.size() > 1) out.cause.cause_note = HowChosen(out.failed, collateral);
  out.alike = out.failed.size() > 1 && collateral == 0 && Alike(out.failed, out.failed.size());
  return out;
}

}  // namespace ds
