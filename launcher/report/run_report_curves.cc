#include "launcher/report/run_report_curves.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "launcher/report/run_report.h"
#include "launcher/report/run_report_svg.h"

namespace ds {
namespace {

constexpr double kLeft = kReportLeft, kPlot = kReportPlot, kWidth = kReportWidth;
constexpr double kTop = 16, kHeight = 170;  // a curve's plot area
constexpr double kStripTop = 8, kStripRow = 14;

struct Scale {
  double lo = 0, hi = 1;
  double At(double v) const { return hi > lo ? (v - lo) / (hi - lo) : 0; }
};

// The step axis at `y` over [lo, hi]: ticks, labels, "step" under them.
std::string StepAxis(const Scale& x, double y) {
  std::string out = fmt::format("<line class=\"axis\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>\n",
                                kLeft, y, kLeft + kPlot, y);
  const double step = std::max(1.0, TickStep(x.hi - x.lo));
  for (double s = std::ceil(x.lo / step) * step; s <= x.hi + step / 1000; s += step)
    out += fmt::format("<line class=\"tick\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"/>"
                       "<text class=\"tick\" x=\"{0:.1f}\" y=\"{3:.1f}\">{4:g}</text>\n",
                       kLeft + x.At(s) * kPlot, y, y + 4, y + 16, s);
  return out + fmt::format("<text class=\"caption\" x=\"{:.1f}\" y=\"{:.1f}\">step</text>\n", kLeft + kPlot / 2,
                           y + 32);
}

// One curve of `points` over steps, its y axis from 0 (or the lowest value,
// when below 0) to a round top; `percent` labels 0..1 as percentages.
std::string Curve(const std::vector<MetricPoint>& points, const std::string& what, const std::string& css, int rank,
                  bool percent) {
  Scale x{static_cast<double>(points.front().step), static_cast<double>(points.back().step)};
  if (x.hi <= x.lo) x.hi = x.lo + 1;
  double lo = 0, hi = percent ? 1 : 0;
  for (const MetricPoint& p : points) {
    lo = std::min(lo, p.value);
    hi = std::max(hi, p.value);
  }
  const double step = TickStep((hi - lo) > 0 ? (hi - lo) * 2 : 1);  // ~4 ticks up the y axis
  Scale y{std::floor(lo / step) * step, std::max(step, std::ceil(hi / step) * step)};
  auto px = [&](double s) { return kLeft + x.At(s) * kPlot; };
  auto py = [&](double v) { return kTop + kHeight * (1 - y.At(v)); };
  std::string out = fmt::format("<svg class=\"{0}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{1:.0f}\" "
                                "height=\"{2:.0f}\" viewBox=\"0 0 {1:.0f} {2:.0f}\" role=\"img\" "
                                "aria-label=\"{3} over steps\">\n<title>{3} over steps, rank {4}'s</title>\n",
                                css, kWidth, kTop + kHeight + 44, what, rank);
  out += fmt::format("<text class=\"caption\" transform=\"translate(40 {:.1f}) rotate(-90)\">{}</text>\n",
                     kTop + kHeight / 2, what);
  for (double v = y.lo; v <= y.hi + step / 1000; v += step)
    out += fmt::format("<line class=\"grid\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\"/>"
                       "<text class=\"ytick\" x=\"{3:.1f}\" y=\"{4:.1f}\">{5}</text>\n",
                       kLeft, py(v), kLeft + kPlot, kLeft - 8, py(v) + 4,
                       percent ? fmt::format("{:g}%", std::round(v * 1000) / 10) : fmt::format("{:g}", v));
  std::string line;
  for (const MetricPoint& p : points)
    line += fmt::format("{}{:.1f},{:.1f}", line.empty() ? "" : " ", px(static_cast<double>(p.step)), py(p.value));
  out += "<polyline class=\"" + css + "\" points=\"" + line + "\"/>\n";
  const MetricPoint& last = points.back();  // the value the run ended with, said in words
  out += fmt::format("<g class=\"last\"><title>step {}: {} {}</title><circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\"/>"
                     "</g>\n",
                     last.step, what, percent ? fmt::format("{:.2f}%", last.value * 100) : fmt::format("{:.4g}", last.value),
                     px(static_cast<double>(last.step)), py(last.value));
  return out + StepAxis(x, kTop + kHeight) + "</svg>\n";
}

// The lower median: of two ranks, the faster one's, so the slower shows.
double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>((v.size() - 1) / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

}  // namespace

int LagClass(double ratio) { return ratio < 1.25 ? 0 : ratio < 1.5 ? 1 : ratio < 2 ? 2 : 3; }

std::string LossSvg(const RunTimeline& t) {
  return t.losses.empty() ? "" : Curve(t.losses, "loss", "loss", t.metric_rank, false);
}

std::string AccuracySvg(const RunTimeline& t) {
  return t.accuracies.empty() ? "" : Curve(t.accuracies, "accuracy", "accuracy", t.metric_rank, true);
}

std::string StepTimeStripSvg(const RunTimeline& t, const std::vector<RankView>& ranks) {
  if (t.strip.empty()) return "";
  std::map<int32_t, std::string> hosts;
  for (const RankView& r : ranks) hosts[r.rank] = r.host;
  const double bottom = kStripTop + t.strip_ranks.size() * kStripRow;
  std::string out = fmt::format("<svg class=\"strip\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" "
                                "height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} {1:.0f}\" role=\"img\" "
                                "aria-label=\"step time per rank over time\">\n",
                                kWidth, bottom + 44);
  for (size_t i = 0; i < t.strip_ranks.size(); ++i) {
    const int32_t rank = t.strip_ranks[i];
    const std::string host = hosts.count(rank) ? " (" + HtmlEscape(hosts[rank]) + ")" : "";
    out += fmt::format("<text class=\"host\" x=\"{:.1f}\" y=\"{:.1f}\">rank {}{}</text>\n", kLeft - 8,
                       kStripTop + i * kStripRow + kStripRow - 3, rank, host);
  }
  for (size_t c = 0; c < t.strip.size(); ++c) {
    const StripColumn& col = t.strip[c];
    std::vector<double> heard;
    for (double s : col.step_seconds)
      if (s > 0) heard.push_back(s);
    const double median = Median(heard);
    const double x0 = TimeX(t, col.t);
    const double x1 = c + 1 < t.strip.size() ? TimeX(t, t.strip[c + 1].t) : kLeft + kPlot;
    for (size_t i = 0; i < col.step_seconds.size(); ++i) {
      const double s = col.step_seconds[i];
      if (!(s > 0) || !(median > 0)) continue;
      const double ratio = s / median;
      out += fmt::format("<rect class=\"lag{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\">"
                         "<title>rank {} at {:.1f} s: {:.3f} s per step, {:.1f}x the median</title></rect>\n",
                         LagClass(ratio), x0, kStripTop + i * kStripRow + 1, std::max(x1 - x0, 1.0), kStripRow - 2,
                         t.strip_ranks[i], col.t, s, ratio);
    }
  }
  return out + TimeAxis(t, bottom) + "</svg>\n";
}

}  // namespace ds
