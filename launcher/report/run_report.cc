#include "launcher/report/run_report.h"

#include <algorithm>
#include <ctime>

#include <fmt/format.h>

#include "common/strings.h"
#include "launcher/report/run_report_svg.h"

namespace ds {
namespace {

constexpr const char* kStyle = R"(body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:20px;margin:0 0 12px}h2{font-size:16px;margin:20px 0 6px}
table{border-collapse:collapse}td,th{padding:2px 10px;text-align:left;border-bottom:1px solid #ddd}
th{font-weight:600}.bad{color:#b00020;font-weight:600}.ok{color:#1b7f3b;font-weight:600}
pre.ending{background:#f6f6f6;padding:8px;white-space:pre-wrap}
svg text{font:12px system-ui,sans-serif;fill:#222}text.host{text-anchor:end}text.tick{text-anchor:middle;fill:#555}
text.ytick{text-anchor:end;fill:#555}text.caption{text-anchor:middle;fill:#555}
line.axis{stroke:#444}line.tick{stroke:#444}line.row{stroke:#eee}line.grid{stroke:#eee}
rect.gen0{fill:#cfe3f7}rect.gen1{fill:#bcd8c6}text.gen{fill:#234}
g.restart line{stroke:#b00020;stroke-width:2;stroke-dasharray:4 3}g.restart text{fill:#b00020;font-weight:600}
g.lost circle{fill:#b00020}g.rejoined circle{fill:#1b7f3b}g.slow path{fill:#e08a00}
g.lost text{fill:#b00020}g.rejoined text{fill:#1b7f3b}g.slow text{fill:#a06000}
polyline.sps{fill:none;stroke:#1f5fbf;stroke-width:2}g.snapshot path{fill:#6a3fb5}
)";

std::string Row(const std::string& key, const std::string& value) {
  return fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", key, value);
}

std::string Utc(int64_t seconds) {
  const time_t t = static_cast<time_t>(seconds);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string Command(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) out += (out.empty() ? "" : " ") + ShellQuote(a);
  return out;
}

std::string Summary(const JobView& v, const RunTimeline& t, const RecordEnding& e) {
  std::string exit = v.exit_code < 0 ? "running (no exit yet)"
                     : v.exit_code == 0 ? "<span class=\"ok\">0 (success)</span>"
                                        : fmt::format("<span class=\"bad\">{} (failed)</span>", v.exit_code);
  std::string out = "<table class=\"summary\">\n";
  out += Row("job", HtmlEscape(v.job_id)) + Row("exit code", exit);
  if (!e.argv.empty()) out += Row("command", "<code>" + HtmlEscape(Command(e.argv)) + "</code>");
  if (e.started > 0) out += Row("started", Utc(e.started));
  out += Row("elapsed", fmt::format("{:.1f} s", v.elapsed_seconds));
  out += Row("restarts", fmt::format("{} of at most {}", v.restarts, v.max_restarts));
  out += Row("generation", std::to_string(v.generation));
  out += Row("ranks", v.exit_code < 0 ? fmt::format("{} running of world size {}", v.ranks_running, v.world_size)
                                      : fmt::format("world size {}", v.world_size));
  // The record's own count includes the agents leaving at the end: the timeline's lost marks do not.
  const auto lost = std::count_if(t.events.begin(), t.events.end(), [](const TimelineEvent& e) { return e.kind == "lost"; });
  out += Row("nodes", fmt::format("{}, {} lost while the job ran", v.nodes.size(), lost));
  return out + "</table>\n";
}

std::string Restarts(const RunTimeline& t) {
  std::string out;
  int n = 0;
  for (const TimelineEvent& e : t.events)
    if (e.kind == "restart")
      out += fmt::format("<li class=\"restart\">restart {} at {:.1f} s: {}</li>\n", ++n, e.t, HtmlEscape(e.text));
  return out.empty() ? "<p>No restarts.</p>\n" : "<ol class=\"restarts\">\n" + out + "</ol>\n";
}

std::string Ranks(const JobView& v) {
  if (v.ranks.empty()) return "";
  std::string out = "<h2>Ranks at the end</h2>\n<table class=\"ranks\">\n"
                    "<tr><th>rank</th><th>host</th><th>step</th><th>samples/s</th></tr>\n";
  for (const RankView& r : v.ranks)
    out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", r.rank, HtmlEscape(r.host),
                       r.step < 0 ? "-" : std::to_string(r.step),
                       r.samples_per_second < 0 ? "-" : fmt::format("{:.0f}", r.samples_per_second));
  return out + "</table>\n";
}

}  // namespace

std::string HtmlEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string RunReportHtml(const JobView& v, const RunTimeline& t, const RecordEnding& e) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += fmt::format("<title>dslaunch report: job {}</title>\n<style>\n{}</style>\n</head>\n<body>\n",
                     HtmlEscape(v.job_id), kStyle);
  out += fmt::format("<h1>dslaunch job {}</h1>\n", HtmlEscape(v.job_id)) + Summary(v, t, e);
  if (!e.summary.empty()) out += "<h2>How it ended</h2>\n<pre class=\"ending\">" + HtmlEscape(e.summary) + "</pre>\n";
  out += "<h2>Timeline per node</h2>\n" + TimelineSvg(v.nodes, t);
  if (t.dropped > 0)
    out += fmt::format("<p class=\"dropped\">{} later events not kept (the record's bound).</p>\n", t.dropped);
  out += "<h2>Restarts</h2>\n" + Restarts(t);
  const std::string samples = SamplesSvg(t);
  out += "<h2>Samples/s</h2>\n" + (samples.empty() ? "<p>No rank reported samples/s.</p>\n" : samples);
  return out + Ranks(v) + "</body>\n</html>\n";
}

}  // namespace ds
