#include "launcher/report/run_report_svg.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "launcher/report/run_report.h"

namespace ds {
namespace {

constexpr double kWidth = kReportWidth, kLeft = kReportLeft, kPlot = kReportPlot;
constexpr double kTop = 34, kRow = 26;                     // timeline rows under the restart labels
constexpr double kChartTop = 16, kChartHeight = 170;       // samples/s plot area

double X(const RunTimeline& t, double at) { return TimeX(t, at); }

}  // namespace

double TimeX(const RunTimeline& t, double at) {
  return kLeft + (t.end > 0 ? std::clamp(at / t.end, 0.0, 1.0) : 0) * kPlot;
}

double TickStep(double span) {
  if (!(span > 0)) return 1;
  const double raw = span / 8, p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}

std::string TimeAxis(const RunTimeline& t, double y) {
  std::string out = fmt::format("<line class=\"axis\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>\n",
                                kLeft, y, kLeft + kPlot, y);
  const double step = TickStep(t.end);
  for (double s = 0; s <= t.end + step / 1000; s += step)
    out += fmt::format("<line class=\"tick\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"/>"
                       "<text class=\"tick\" x=\"{0:.1f}\" y=\"{3:.1f}\">{4:g} s</text>\n",
                       X(t, s), y, y + 4, y + 16, s);
  return out + fmt::format("<text class=\"caption\" x=\"{:.1f}\" y=\"{:.1f}\">time (s)</text>\n",
                           kLeft + kPlot / 2, y + 32);
}

namespace {

std::string Bands(const RunTimeline& t, const std::map<uint32_t, size_t>& row) {
  std::string out;
  for (size_t k = 0; k < t.generations.size(); ++k) {
    const TimelineGeneration& g = t.generations[k];
    const double x0 = X(t, g.start), x1 = X(t, k + 1 < t.generations.size() ? t.generations[k + 1].start : t.end);
    for (uint32_t n : g.nodes) {
      const double y = kTop + row.at(n) * kRow + 3;
      out += fmt::format("<rect class=\"gen gen{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\">"
                         "<title>generation {}: world size {}</title></rect>"
                         "<text class=\"gen\" x=\"{:.1f}\" y=\"{:.1f}\">gen {}</text>\n",
                         k % 2, x0, y, std::max(x1 - x0, 1.0), kRow - 6, g.generation, g.world_size, x0 + 4,
                         y + kRow - 11, g.generation);
    }
  }
  return out;
}

std::string Marks(const RunTimeline& t, const std::map<uint32_t, size_t>& row, double bottom) {
  std::string out;
  int restart = 0;
  for (const TimelineEvent& e : t.events) {
    const double x = X(t, e.t);
    if (e.kind == "restart") {
      out += fmt::format("<g class=\"restart\"><title>restart {0} at {1:.1f} s: {2}</title>"
                         "<line x1=\"{3:.1f}\" y1=\"{4:.1f}\" x2=\"{3:.1f}\" y2=\"{5:.1f}\"/>"
                         "<text x=\"{3:.1f}\" y=\"{6:.1f}\">restart {0}</text></g>\n",
                         ++restart, e.t, HtmlEscape(e.text), x, kTop - 4, bottom, kTop - 10);
      continue;
    }
    if (e.node < 0 || row.count(e.node) == 0) continue;
    const double y = kTop + row.at(e.node) * kRow + kRow / 2;
    const std::string shape =
        e.kind == "slow" ? fmt::format("<path d=\"M{:.1f} {:.1f}l5 9h-10z\"/>", x, y - 6)
                         : fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\"/>", x, y);
    out += fmt::format("<g class=\"{0}\"><title>{1} {0} at {2:.1f} s</title>{3}"
                       "<text x=\"{4:.1f}\" y=\"{5:.1f}\">{0}</text></g>\n",
                       HtmlEscape(e.kind), HtmlEscape(e.host), e.t, shape, x + 7, y + 4);
  }
  return out;
}

// The snapshot points on their own row `y`: a diamond each, its step in the title.
std::string SnapshotRow(const RunTimeline& t, double y) {
  std::string out = fmt::format("<text class=\"host\" x=\"{:.1f}\" y=\"{:.1f}\">snapshots</text>"
                                "<line class=\"row\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>\n",
                                kLeft - 8, y + kRow / 2 + 4, kLeft, y + kRow, kLeft + kPlot, y + kRow);
  for (const TimelineSnapshot& s : t.snapshots)
    out += fmt::format("<g class=\"snapshot\"><title>snapshot{} at {:.1f} s</title>"
                       "<path d=\"M{:.1f} {:.1f}l5 5l-5 5l-5 -5z\"/></g>\n",
                       s.step >= 0 ? fmt::format(" of step {}", s.step) : "", s.t, X(t, s.t), y + kRow / 2 - 5);
  return out;
}

}  // namespace

std::string TimelineSvg(const std::vector<NodeView>& nodes, const RunTimeline& t) {
  std::map<uint32_t, std::string> hosts;  // by node index: the rows
  for (const NodeView& n : nodes) hosts[n.node] = n.host;
  for (const TimelineGeneration& g : t.generations)
    for (uint32_t n : g.nodes) hosts.emplace(n, "node " + std::to_string(n));
  for (const TimelineEvent& e : t.events)
    if (e.node >= 0) hosts.emplace(e.node, e.host);
  std::map<uint32_t, size_t> row;
  std::string rows;
  for (const auto& [node, host] : hosts) {
    const size_t i = row.size();
    const double y = kTop + i * kRow;
    rows += fmt::format("<text class=\"host\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>"
                        "<line class=\"row\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>\n",
                        kLeft - 8, y + kRow / 2 + 4, HtmlEscape(host), kLeft, y + kRow, kLeft + kPlot, y + kRow);
    row[node] = i;
  }
  const double snapshots_y = kTop + row.size() * kRow;
  const double bottom = snapshots_y + (t.snapshots.empty() ? 0 : kRow);
  const double height = bottom + 44;
  return fmt::format("<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" "
                     "height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} {1:.0f}\" role=\"img\" aria-label=\"timeline per node\">\n",
                     kWidth, height) +
         rows + Bands(t, row) + (t.snapshots.empty() ? "" : SnapshotRow(t, snapshots_y)) + Marks(t, row, bottom) +
         TimeAxis(t, bottom) + "</svg>\n";
}

std::string SamplesSvg(const RunTimeline& t) {
  if (t.samples.empty()) return "";
  double top = 0;
  for (const TimelineSample& s : t.samples) top = std::max(top, s.samples_per_second);
  const double step = TickStep(top > 0 ? top * 8 / 4 : 1);  // ~4 ticks up the y axis
  top = std::max(step, std::ceil(top / step) * step);
  auto y = [&](double v) { return kChartTop + kChartHeight * (1 - v / top); };
  std::string out = fmt::format("<svg class=\"samples\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" "
                                "height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} {1:.0f}\" role=\"img\" "
                                "aria-label=\"samples per second over time\">\n",
                                kWidth, kChartTop + kChartHeight + 44);
  out += fmt::format("<text class=\"caption\" transform=\"translate(40 {:.1f}) rotate(-90)\">samples/s</text>\n",
                     kChartTop + kChartHeight / 2);
  for (double v = 0; v <= top + step / 1000; v += step)
    out += fmt::format("<line class=\"grid\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\"/>"
                       "<text class=\"ytick\" x=\"{3:.1f}\" y=\"{4:.1f}\">{5:g}</text>\n",
                       kLeft, y(v), kLeft + kPlot, kLeft - 8, y(v) + 4, v);
  std::string points;
  for (const TimelineSample& s : t.samples)
    points += fmt::format("{}{:.1f},{:.1f}", points.empty() ? "" : " ", X(t, s.t), y(s.samples_per_second));
  out += "<polyline class=\"sps\" points=\"" + points + "\"/>\n";
  return out + TimeAxis(t, kChartTop + kChartHeight) + "</svg>\n";
}

}  // namespace ds
