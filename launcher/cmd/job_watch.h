// JobWatch: what lets a person see a running job, on the coordinator's
// io_context: the status line at the bottom of a terminal stderr (LogMux
// draws it; redrawn every kStatusPeriod with the job's JobView, only when the
// text changed), a plain "dslaunch: ..." progress line every
// progress_interval seconds when stderr is no terminal (0 = never), and
// `--metrics-port`'s /metrics (MetricsServer), and the job's status socket
// for `dslaunch status` (StatusServer, in the user's private directory;
// without one, a warning and no socket). Every kSamplePeriod it also samples
// the job's view into the run's timeline (run_report_timeline.h), which the
// job record keeps for `dslaunch report`, with how the job ended, what it
// was started from and where its files are (RecordEnding). It borrows everything; the io
// thread only. Stop() ends its timers, closes the servers and leaves the job
// record with its timeline (the job is over), so io.run() can return.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/asio.h"
#include "common/status.h"
#include "launcher/coordinator/attach_hub.h"
#include "launcher/coordinator/coordinator.h"
#include "launcher/coordinator/metrics_server.h"
#include "launcher/coordinator/status_server.h"
#include "launcher/report/job_record.h"
#include "launcher/report/job_view.h"
#include "launcher/report/log_mux.h"
#include "launcher/report/run_report_json.h"
#include "launcher/report/run_report_timeline.h"

namespace ds {

struct JobWatchOptions {
  double progress_interval = 60;   // seconds between plain progress lines off a terminal; 0 = none
  int metrics_port = -1;           // -1 = no /metrics; 0 = any free port
  std::string metrics_addr = "127.0.0.1";
};

class JobWatch {
 public:
  static constexpr std::chrono::milliseconds kStatusPeriod{250};
  static constexpr std::chrono::seconds kSamplePeriod{2};

  JobWatch(asio::io_context& io, const Coordinator& coord, const JobRecord& record, LogMux& mux,
           JobWatchOptions options);
  // Listens for /metrics (when asked) and starts the timer. Error: the
  // metrics port cannot be bound (named as typed).
  Status Start();
  void Stop();
  // From now on `hub` (borrowed; null = none) gets the status line every
  // kStatusPeriod while it has clients, whether or not a terminal shows it.
  void FeedStatus(AttachHub* hub) { hub_ = hub; }
  // The /metrics port (after Start; 0 when none).
  int metrics_port() const { return server_ ? server_->port() : 0; }

 private:
  void Tick();
  void SampleTick();
  void Sample(const JobView& view);
  JobView View() const;
  RecordEnding Ending(const JobView& last) const;
  std::string StatusText() const;

  asio::io_context& io_;
  const Coordinator& coord_;
  const JobRecord& record_;
  LogMux& mux_;
  JobWatchOptions opt_;
  asio::steady_timer timer_;
  asio::steady_timer sample_timer_;
  TimelineSampler sampler_;
  std::unique_ptr<MetricsServer> server_;
  std::unique_ptr<StatusServer> status_;
  bool stopped_ = false;
  AttachHub* hub_ = nullptr;
  Clock::time_point next_progress_;  // the next plain progress line off a terminal
};

// The terminal's width in columns (stderr), 0 when unknown.
int TerminalColumns();
// This process's command line as it was started (/proc/self/cmdline); empty when unreadable.
std::vector<std::string> OwnCommandLine();

}  // namespace ds
