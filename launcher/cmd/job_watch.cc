#include "launcher/cmd/job_watch.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <fstream>

#include <fmt/format.h>

#include "common/version.h"
#include "launcher/coordinator/job_view_builder.h"
#include "launcher/report/job_summary.h"
#include "launcher/report/job_view_json.h"
#include "launcher/report/metrics_text.h"
#include "launcher/report/run_report_json.h"
#include "launcher/report/status_line.h"

namespace ds {

int TerminalColumns() {
  winsize ws{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) != 0) return 0;
  return ws.ws_col;
}

JobWatch::JobWatch(asio::io_context& io, const Coordinator& coord, const JobRecord& record, LogMux& mux,
                   JobWatchOptions options)
    : io_(io), coord_(coord), record_(record), mux_(mux), opt_(std::move(options)), timer_(io), sample_timer_(io) {}

Status JobWatch::Start() {
  if (opt_.metrics_port >= 0) {
    server_ = std::make_unique<MetricsServer>(
        io_, MetricsServerOptions{.addr = opt_.metrics_addr, .port = opt_.metrics_port},
        [this] { return MetricsText(View()); });
    DS_RETURN_IF_ERROR(server_->Listen());
    const bool v6 = opt_.metrics_addr.find(':') != std::string::npos;
    mux_.Notice(v6 ? fmt::format("dslaunch: metrics at http://[{}]:{}/metrics", opt_.metrics_addr, server_->port())
                   : fmt::format("dslaunch: metrics at http://{}:{}/metrics", opt_.metrics_addr, server_->port()));
  }
  Result<PrivateDir> dir = OpenPrivateDir();
  status_ = std::make_unique<StatusServer>(io_, [this] { return JobViewJson(View()); });
  Status st = dir.ok() ? status_->Listen(std::move(dir).value(), fmt::format("{}-{}", coord_.control().options().job_id, ::getpid()))
                       : dir.status();
  if (!st.ok()) {
    mux_.Notice("dslaunch: warning: no status socket, `dslaunch status` will not find this job: " + st.message());
    status_.reset();
  }
  Tick();
  SampleTick();
  return Status::OK();
}

void JobWatch::Stop() {
  stopped_ = true;
  timer_.cancel();
  sample_timer_.cancel();
  if (server_) server_->Close();
  if (!status_) return;
  JobView last = View();
  last.exit_code = record_.ExitCode();
  Sample(last);
  Result<std::string> text = WithTimeline(JobViewJson(last), sampler_.timeline());
  if (text.ok()) text = WithEnding(*text, Ending(last));  // for `dslaunch status JOB` and the report after the fact
  if (Status st = text.ok() ? status_->Finish(*text) : text.status(); !st.ok())
    mux_.Notice("dslaunch: warning: no job record for `dslaunch status`: " + st.message());
  status_.reset();
}

// How it ended, what it was started from and where its files are.
RecordEnding JobWatch::Ending(const JobView& last) const {
  const LaunchPlan& plan = coord_.control().plan();
  const auto started = std::chrono::system_clock::now() - std::chrono::duration<double>(last.elapsed_seconds);
  RecordEnding e;
  e.summary = FormatSummary(record_, last.world_size, /*color=*/false);
  e.argv = coord_.control().options().argv;
  e.started = std::chrono::duration_cast<std::chrono::seconds>(started.time_since_epoch()).count();
  e.command_line = OwnCommandLine();
  e.job_file = plan.job.path;
  e.hostfile = plan.hostfile_path;
  e.version = DSLAUNCH_VERSION;
  e.log_dir = mux_.log_dir();
  e.checkpoint_dir = plan.job.checkpoint.dir;
  e.stacks_path = record_.hang_stacks_path;
  e.hang_stacks = record_.hang_stacks;
  e.hang_report = record_.hang_report;
  return e;
}

std::vector<std::string> OwnCommandLine() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> argv;
  for (std::string arg; std::getline(in, arg, '\0');) argv.push_back(arg);
  return argv;
}

JobView JobWatch::View() const {
  JobView v = BuildJobView(coord_.control(), record_, RealClock().Now());
  v.pid = ::getpid();
  return v;
}

void JobWatch::Sample(const JobView& view) {
  std::vector<RestartCause> causes;
  const auto now = std::chrono::system_clock::now();
  for (const Failure& f : record_.restart_causes())
    causes.push_back({view.elapsed_seconds - std::chrono::duration<double>(now - f.time).count(), DescribeFailure(f)});
  sampler_.Sample(view, coord_.control().slow_nodes(), causes);
}

void JobWatch::SampleTick() {
  Sample(View());
  sample_timer_.expires_after(kSamplePeriod);
  sample_timer_.async_wait([this](boost::system::error_code ec) {
    if (!ec && !stopped_) SampleTick();
  });
}

std::string JobWatch::StatusText() const { return StatusLineText(View()); }

// On a terminal, or for attach clients: the status line every
// kStatusPeriod (LogMux and the hub skip an unchanged text); off a terminal
// also a plain line per progress_interval, the first one interval after the start.
void JobWatch::Tick() {
  const bool terminal = mux_.status_shown();
  const bool followed = hub_ != nullptr && hub_->clients() > 0;
  if (terminal || followed) {
    std::string text = StatusText();
    if (followed) hub_->OnStatus(text);
    const int columns = TerminalColumns();
    if (columns > 1 && text.size() >= static_cast<size_t>(columns)) text.resize(columns - 1);  // never wraps
    if (terminal) mux_.SetStatus(text);
  }
  const bool plain = !terminal && opt_.progress_interval > 0;
  if (plain && next_progress_ == Clock::time_point{}) next_progress_ = RealClock().Now() + Seconds(opt_.progress_interval);
  if (!terminal && hub_ == nullptr && !plain) return;
  timer_.expires_after(terminal || hub_ != nullptr ? Clock::duration(kStatusPeriod) : Seconds(opt_.progress_interval));
  timer_.async_wait([this, plain](boost::system::error_code ec) {
    if (ec || stopped_) return;
    if (plain && !mux_.status_shown() && RealClock().Now() >= next_progress_) {
      mux_.Notice(StatusText());
      next_progress_ = RealClock().Now() + Seconds(opt_.progress_interval);
    }
    Tick();
  });
}

}  // namespace ds
