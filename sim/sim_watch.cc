#include "sim/sim_watch.h"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

#include "common/private_dir.h"
#include "launcher/coordinator/job_view_builder.h"
#include "launcher/report/job_view_json.h"
#include "launcher/report/metrics_text.h"
#include "launcher/report/status_line.h"

namespace ds::sim {
namespace {

constexpr std::chrono::milliseconds kStatusPeriod{250};  // JobWatch::kStatusPeriod

}  // namespace

SimWatch::SimWatch(asio::io_context& io, const Coordinator& coord, const JobRecord& record)
    : coord_(coord), record_(record), timer_(io), metrics_(io, MetricsServerOptions{}, [this] {
        return MetricsText(View());
      }),
      status_(std::make_unique<StatusServer>(io, [this] { return JobViewJson(View()); })) {}

Status SimWatch::Start() {
  DS_RETURN_IF_ERROR(metrics_.Listen());
  DS_ASSIGN_OR_RETURN(PrivateDir dir, OpenPrivateDir());
  const std::string& job = coord_.control().options().job_id;
  DS_RETURN_IF_ERROR(status_->Listen(std::move(dir), fmt::format("{}-{}", job, ::getpid())));
  std::fprintf(stderr, "dssim: metrics at http://127.0.0.1:%d/metrics, job %s\n", metrics_.port(), job.c_str());
  std::fflush(stderr);
  Tick();
  return Status::OK();
}

void SimWatch::Stop() {
  stopped_ = true;
  timer_.cancel();
  metrics_.Close();
  status_.reset();
}

JobView SimWatch::View() const {
  JobView v = BuildJobView(coord_.control(), record_, RealClock().Now());
  v.pid = ::getpid();
  return v;
}

// The status line's text, as JobWatch::Tick builds it on a terminal.
void SimWatch::Tick() {
  const std::string line = StatusLineText(View());
  (void)line;
  timer_.expires_after(kStatusPeriod);
  timer_.async_wait([this](boost::system::error_code ec) {
    if (!ec && !stopped_) Tick();
  });
}

}  // namespace ds::sim
