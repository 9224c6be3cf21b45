#include "launcher/report/run_report.h"

#include <algorithm>
#include <ctime>

#include <fmt/format.h>

#include "common/strings.h"
#include "launcher/report/run_report_curves.h"
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
polyline.loss{fill:none;stroke:#b5541f;stroke-width:2}polyline.accuracy{fill:none;stroke:#1b7f3b;stroke-width:2}
g.last circle{fill:#222}rect.lag0{fill:#dfe9df}rect.lag1{fill:#f6d68a}rect.lag2{fill:#f0a040}rect.lag3{fill:#c0392b}
span.lag{display:inline-block;width:12px;height:12px;vertical-align:middle;margin:0 4px 0 12px}
details pre{background:#f6f6f6;padding:8px;white-space:pre-wrap}
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

// "1h02m03s (3723.4 s)", "42.0 s".
std::string Duration(double seconds) {
  if (seconds < 60) return fmt::format("{:.1f} s", seconds);
  const int64_t s = static_cast<int64_t>(seconds);
  const std::string hms = s >= 3600 ? fmt::format("{}h{:02}m{:02}s", s / 3600, s / 60 % 60, s % 60)
                                    : fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{} ({:.1f} s)", hms, seconds);
}

std::string CodeRow(const std::string& key, const std::string& value) {
  return value.empty() ? "" : Row(key, "<code>" + HtmlEscape(value) + "</code>");
}

std::string Summary(const JobView& v, const RunTimeline& t, const RecordEnding& e) {
  std::string exit = v.exit_code < 0 ? "running (no exit yet)"
                     : v.exit_code == 0 ? "<span class=\"ok\">0 (success)</span>"
                                        : fmt::format("<span class=\"bad\">{} (failed)</span>", v.exit_code);
  std::string out = "<table class=\"summary\">\n";
  out += Row("job", HtmlEscape(v.job_id)) + Row("exit code", exit);
  out += CodeRow("command line", Command(e.command_line));
  if (!e.argv.empty()) out += Row("command", "<code>" + HtmlEscape(Command(e.argv)) + "</code>");
  out += CodeRow("job file", e.job_file);
  if (!e.version.empty())  // a record of this dslaunch says when there was none
    out += Row("hostfile", e.hostfile.empty() ? "none (this machine)" : "<code>" + HtmlEscape(e.hostfile) + "</code>");
  if (e.started > 0) out += Row("started", Utc(e.started));
  out += Row(v.exit_code < 0 ? "elapsed" : "duration", Duration(v.elapsed_seconds));
  if (!e.version.empty()) out += Row("dslaunch", HtmlEscape(e.version));
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

// Where the job's files are: per-rank logs, the last hang's stacks, checkpoints.
std::string Files(const RecordEnding& e) {
  if (e.version.empty()) return "";  // an older record kept none of it
  std::string out = "<h2>Files</h2>\n<table class=\"files\">\n";
  out += Row("logs", e.log_dir.empty() ? "none kept (no --log-dir or log_dir:)"
                                       : "<code>" + HtmlEscape(e.log_dir) + "</code> (one file per rank)");
  std::string stacks = e.hang_stacks.empty() ? "no hang" : "in this page (below)";
  if (!e.stacks_path.empty()) stacks = "<code>" + HtmlEscape(e.stacks_path) + "</code>";
  out += Row("hang stacks", stacks);
  out += Row("checkpoints", e.checkpoint_dir.empty() ? "none configured"
                                                     : "<code>" + HtmlEscape(e.checkpoint_dir) + "</code>");
  out += "</table>\n";
  if (!e.hang_report.empty()) {
    out += "<h3>The last hang: ranks grouped by stack</h3>\n<pre class=\"hang-report\">";
    for (const std::string& line : e.hang_report) out += HtmlEscape(line) + "\n";
    out += "</pre>\n";
  }
  if (!e.hang_stacks.empty())
    out += "<details class=\"stacks\"><summary>every rank's stacks at the last hang</summary><pre>" +
           HtmlEscape(e.hang_stacks) + "</pre></details>\n";
  return out;
}

// The loss and accuracy over steps, and who lagged when.
std::string Training(const JobView& v, const RunTimeline& t) {
  std::string out = "<h2>Loss and accuracy</h2>\n";
  const std::string loss = LossSvg(t), accuracy = AccuracySvg(t);
  if (loss.empty() && accuracy.empty())
    out += "<p>No rank said a loss (dstrain does; a script passes its loss with its step beats: docs/usage.md, "
           "\"Step heartbeats from your own script\").</p>\n";
  out += loss + accuracy;
  out += "<h2>Step time per rank</h2>\n";
  const std::string strip = StepTimeStripSvg(t, v.ranks);
  if (strip.empty()) return out + "<p>No rank reported a step time (step beats: docs/usage.md).</p>\n";
  out += "<p class=\"legend\">against each moment's median over the ranks:"
         "<span class=\"lag\" style=\"background:#dfe9df\"></span>within 1.25x"
         "<span class=\"lag\" style=\"background:#f6d68a\"></span>to 1.5x"
         "<span class=\"lag\" style=\"background:#f0a040\"></span>to 2x"
         "<span class=\"lag\" style=\"background:#c0392b\"></span>beyond</p>\n";
  out += strip;
  if (t.strip_ranks_left_out > 0)
    out += fmt::format("<p class=\"dropped\">{} more ranks not shown (the record keeps the first {}).</p>\n",
                       t.strip_ranks_left_out, TimelineSampler::kMaxStripRanks);
  return out;
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
  out += Training(v, t);
  return out + Ranks(v) + Files(e) + "</body>\n</html>\n";
}

}  // namespace ds
