// JobControl and hangs (job_control.h): HangDetector (hang_detector.h)
// judges the per-rank view from the timer; once it says the generation is
// hung, every agent of the generation is asked for its workers' stacks
// (DumpStacks, stack_collection.h) before anything is killed; when all
// answered or StackCollection::kSeconds passed, the grouped report (hang_report.h) is said,
// every stack goes to <log_dir>/stacks.gen<G>.txt and the job record, and
// the generation fails as any failure does (a restart within the budget).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/log.h"
#include "launcher/coordinator/hang_report.h"
#include "launcher/coordinator/job_control.h"

namespace ds {
namespace {

// `text` into `path`, created 0600, never through a symbolic link (the log
// directory is the user's, a file in it may be anyone's link); "" or why not.
std::string WriteStacksFile(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return std::strerror(errno);
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const std::string why = done == text.size() ? "" : std::strerror(errno);
  ::close(fd);
  return why;
}

}  // namespace

void JobControl::CheckHang(Clock::time_point now) {
  if (state_ != CoordState::kRunning) return;
  if (stacks_.active()) {
    if (now >= stacks_.deadline()) FinishStacks();
    return;
  }
  if (std::optional<std::string> none = step_watch_.Judge(progress_, generation_, now)) Notice(*none);
  std::optional<std::string> line = hangs_.Judge(progress_, gen_plan_.world_size, now);
  if (!line) return;
  Notice(*line);
  CollectStacks(line->substr(0, line->find(';')), now);
}

// An agent's verdict (elastic.hang_timeout): its worker made no step for that
// long. Every rank's stacks first, as for the detector's, and the failure
// names that rank; a second verdict while collecting changes nothing.
void JobControl::OnWorkerHung(int node, const msg::WorkerHung& m) {
  if (state_ != CoordState::kRunning || static_cast<int>(m.generation) != generation_ || stacks_.active()) return;
  const std::string why = fmt::format("rank {} made no step for {:g} s (elastic.hang_timeout)", m.rank,
                                      static_cast<double>(m.silent_ms) / 1000);
  Notice(fmt::format("{}: {}; taking every rank's stacks before anything is stopped", names_[node], why));
  CollectStacks(why, clock_.Now(), node);
  Rearm();
}

void JobControl::CollectStacks(const std::string& why, Clock::time_point now, int culprit) {
  std::vector<int> asked;
  for (int node : gen_agents_)
    if (agents_[node].connected()) asked.push_back(node);
  stacks_.Begin(why, culprit, generation_, now, asked);
  const Bytes ask = msg::DumpStacks{static_cast<uint32_t>(generation_),
                                    static_cast<uint32_t>(StackCollection::kSeconds * 1000 * 3 / 4)}.Encode();
  for (int node : asked) SendTo(node, wire::MsgType::kDumpStacks, ask);
  if (stacks_.complete()) FinishStacks();
}

void JobControl::OnStacks(int node, const msg::Stacks& m) {
  if (state_ == CoordState::kRunning && stacks_.active() && stacks_.OnStacks(node, m)) FinishStacks();
}

// The report, the file, the record; then the ordinary failure path.
void JobControl::FinishStacks() {
  if (state_ != CoordState::kRunning) return stacks_.Clear();  // the generation ended: its own failure speaks
  const std::string why = stacks_.why();
  const int culprit = stacks_.culprit();
  const std::vector<HangStack> stacks = stacks_.Finish(record_, progress_);
  const std::string text = StacksFileText(stacks);
  record_.hang_stacks = text;
  record_.hang_report = HangReportLines(stacks);
  std::string where = "the job record";
  if (!plan_.job.log_dir.empty()) {
    const std::string path = fmt::format("{}/stacks.gen{}.txt", plan_.job.log_dir, generation_);
    const std::string why = WriteStacksFile(path, text);
    where = why.empty() ? path : fmt::format("the job record ({} could not be written: {})", path, why);
    record_.hang_stacks_path = why.empty() ? path : "";
  }
  Notice(fmt::format("hang stacks, generation {} (every rank's in {}):", generation_, where));
  for (const std::string& line : record_.hang_report) Notice("  " + line);
  if (culprit >= 0)  // killed by SIGKILL, as the agent would have: 128 + 9
    return Fail(names_[culprit], why, 137, /*restartable=*/true);
  Fail(OddHosts(stacks), why, 1, /*restartable=*/true);
}

}  // namespace ds
