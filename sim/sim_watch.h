// SimWatch: `dssim --watch`, what dslaunch's JobWatch (launcher/cmd/
// job_watch.h) costs the coordinator, in dssim's coordinator process: the
// status line's view rendered every 250 ms (JobWatch::kStatusPeriod; the
// text is built and dropped, the terminal write is left out), /metrics on
// 127.0.0.1 (any free port; the real MetricsServer) and the job's status
// socket for `dslaunch status` (the real StatusServer, in the user's private
// directory as `<job>-<pid>.sock`). Start() says on stderr
//   dssim: metrics at http://127.0.0.1:P/metrics, job J
// so a bench can scrape it and run `dslaunch status J` (bench/idle_cpu).
// Borrows the coordinator and the record; the io thread only.
#pragma once

#include <memory>

#include "common/asio.h"
#include "common/status.h"
#include "launcher/coordinator/coordinator.h"
#include "launcher/coordinator/metrics_server.h"
#include "launcher/coordinator/status_server.h"
#include "launcher/report/job_record.h"
#include "launcher/report/job_view.h"

namespace ds::sim {

class SimWatch {
 public:
  SimWatch(asio::io_context& io, const Coordinator& coord, const JobRecord& record);
  // Listens (both servers) and starts the status line's timer. Error: a
  // server could not listen (its reason).
  Status Start();
  // The job is over: the timer ends, the servers close, the socket goes (no record is left).
  void Stop();

 private:
  void Tick();
  JobView View() const;

  const Coordinator& coord_;
  const JobRecord& record_;
  asio::steady_timer timer_;
  MetricsServer metrics_;
  std::unique_ptr<StatusServer> status_;  // reset by Stop: the socket goes
  bool stopped_ = false;
};

}  // namespace ds::sim
