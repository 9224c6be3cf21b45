// The report page for a fixed record: exactly the elements it must have
// (summary, bands, marks, the samples/s line and axis), that record text is
// escaped, and the timeline's trip through the job record's JSON.
#include "launcher/report/run_report.h"

#include <catch2/catch.hpp>

#include "launcher/report/job_view_json.h"
#include "launcher/report/run_report_json.h"

namespace ds {
namespace {

bool Has(const std::string& html, const std::string& what) {
  INFO(what);
  return html.find(what) != std::string::npos;
}

// Two nodes, 10 s: generation 0 on both from 0 s, node 1 lost at 4 s,
// restart at 6 s into generation 1 on both, samples/s 100 then 50.
JobView Summary() {
  JobView v;
  v.job_id = "j1";
  v.exit_code = 0;
  v.elapsed_seconds = 10;
  v.generation = 1;
  v.restarts = 1;
  v.max_restarts = 3;
  v.world_size = 2;
  v.ranks_running = 0;
  v.agents_registered = 2;
  v.nodes_lost = 1;
  v.nodes = {{0, "alpha", "idle", 0}, {1, "beta", "idle", 0}};
  v.ranks = {{0, 0, "alpha", 30, 0.1, 25}, {1, 1, "beta", 30, 0.1, 25}};
  return v;
}

RunTimeline Timeline() {
  RunTimeline t;
  t.end = 10;
  t.generations = {{0, 0, 2, {0, 1}}, {1, 6, 2, {0, 1}}};
  t.events = {{4, "lost", 1, "beta", ""}, {6, "restart", -1, "", "host beta: agent lost"}, {7, "rejoined", 1, "beta", ""}};
  t.samples = {{2, 100}, {10, 50}};
  return t;
}

TEST_CASE("run report: the fixed record's page has exactly its elements", "[run_report]") {
  const std::string html = RunReportHtml(Summary(), Timeline());
  CHECK(html.rfind("<!DOCTYPE html>\n", 0) == 0);
  CHECK(Has(html, "<title>dslaunch report: job j1</title>"));
  CHECK(Has(html, "<tr><th>exit code</th><td><span class=\"ok\">0 (success)</span></td></tr>"));
  CHECK(Has(html, "<tr><th>restarts</th><td>1 of at most 3</td></tr>"));
  CHECK(Has(html, "<tr><th>nodes</th><td>2, 1 lost while the job ran</td></tr>"));
  CHECK(Has(html, "<text class=\"host\" x=\"162.0\" y=\"51.0\">alpha</text>"));
  CHECK(Has(html, "<text class=\"host\" x=\"162.0\" y=\"77.0\">beta</text>"));
  // generation 0: [0, 6) s = x 170..626; generation 1: [6, 10] s = x 626..930
  CHECK(Has(html, "<rect class=\"gen gen0\" x=\"170.0\" y=\"37.0\" width=\"456.0\" height=\"20.0\">"
                  "<title>generation 0: world size 2</title></rect>"));
  CHECK(Has(html, "<rect class=\"gen gen1\" x=\"626.0\" y=\"63.0\" width=\"304.0\" height=\"20.0\">"));
  CHECK(Has(html, "<g class=\"restart\"><title>restart 1 at 6.0 s: host beta: agent lost</title>"
                  "<line x1=\"626.0\" y1=\"30.0\" x2=\"626.0\" y2=\"86.0\"/><text x=\"626.0\" y=\"24.0\">restart 1</text></g>"));
  CHECK(Has(html, "<g class=\"lost\"><title>beta lost at 4.0 s</title><circle cx=\"474.0\" cy=\"73.0\" r=\"5\"/>"));
  CHECK(Has(html, "<g class=\"rejoined\">"));
  CHECK(Has(html, "<li class=\"restart\">restart 1 at 6.0 s: host beta: agent lost</li>"));
  // samples/s: y from 0 to 100 over 170 px under a 16 px margin
  CHECK(Has(html, ">samples/s</text>"));
  CHECK(Has(html, "<polyline class=\"sps\" points=\"322.0,16.0 930.0,101.0\"/>"));
  CHECK(Has(html, "<text class=\"ytick\" x=\"162.0\" y=\"190.0\">0</text>"));
  CHECK(Has(html, "<text class=\"tick\" x=\"930.0\" y=\"202.0\">10 s</text>"));
  CHECK(Has(html, "<tr><td>1</td><td>beta</td><td>30</td><td>25</td></tr>"));
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("http://") == html.find("http://www.w3.org/2000/svg"));  // nothing fetched
}

TEST_CASE("run report: snapshot points on their own row under the nodes, in the record too", "[run_report]") {
  RunTimeline t = Timeline();
  t.snapshots = {{2.5, 100}, {5, 200}, {10, -1}};
  const std::string html = RunReportHtml(Summary(), t);
  CHECK(Has(html, "<text class=\"host\" x=\"162.0\" y=\"103.0\">snapshots</text>"));
  // 2.5 s of 10 s: x 170 + 190 = 360; the row under beta's (y 86..112)
  CHECK(Has(html, "<g class=\"snapshot\"><title>snapshot of step 100 at 2.5 s</title>"
                  "<path d=\"M360.0 94.0l5 5l-5 5l-5 -5z\"/></g>"));
  CHECK(Has(html, "<title>snapshot of step 200 at 5.0 s</title>"));
  CHECK(Has(html, "<title>snapshot at 10.0 s</title>"));  // the agents had left: no step known
  CHECK(Has(html, "<line x1=\"626.0\" y1=\"30.0\" x2=\"626.0\" y2=\"112.0\"/>"));  // the restart spans it
  CHECK_FALSE(Has(RunReportHtml(Summary(), Timeline()), ">snapshots</text>"));  // none: no row
  Result<std::string> record = WithTimeline(JobViewJson(Summary()), t);
  REQUIRE(record.ok());
  Result<RunTimeline> back = ParseTimeline(*record, "r.json");
  REQUIRE(back.ok());
  REQUIRE(back->snapshots.size() == 3);
  CHECK((back->snapshots[1].t == 5 && back->snapshots[1].step == 200));
}

TEST_CASE("run report: hosts, causes and the job id are escaped", "[run_report]") {
  JobView v = Summary();
  v.job_id = "j<1>";
  v.nodes[1].host = "b&\"'<x>";
  RunTimeline t = Timeline();
  t.events[0].host = v.nodes[1].host;
  t.events[1].text = "rank 1: <script>alert('x')</script> & \"q\"";
  const std::string html = RunReportHtml(v, t);
  CHECK(Has(html, "<title>dslaunch report: job j&lt;1&gt;</title>"));
  CHECK(Has(html, ">b&amp;&quot;&#39;&lt;x&gt;</text>"));
  CHECK(Has(html, "<title>b&amp;&quot;&#39;&lt;x&gt; lost at 4.0 s</title>"));
  CHECK(Has(html, "restart 1 at 6.0 s: rank 1: &lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;</li>"));
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("b&\"") == std::string::npos);
}

TEST_CASE("run report: a record without samples or a timeline says so", "[run_report]") {
  const std::string html = RunReportHtml(Summary(), RunTimeline{});
  CHECK(Has(html, "<p>No rank reported samples/s.</p>"));
  CHECK(Has(html, "<p>No restarts.</p>"));
}

TEST_CASE("run report json: the timeline survives the record, status still reads it", "[run_report]") {
  Result<std::string> record = WithTimeline(JobViewJson(Summary()), Timeline());
  REQUIRE(record.ok());
  Result<JobView> view = ParseJobViewJson(*record);
  REQUIRE(view.ok());
  CHECK(JobViewJson(*view) == JobViewJson(Summary()));
  Result<RunTimeline> back = ParseTimeline(*record, "r.json");
  REQUIRE(back.ok());
  CHECK(RunReportHtml(*view, *back) == RunReportHtml(Summary(), Timeline()));
  Result<RunTimeline> none = ParseTimeline(JobViewJson(Summary()), "r.json");
  REQUIRE(none.ok());
  CHECK(none->generations.empty());
  CHECK(ParseTimeline("{\"timeline\": {\"end\": 1}}", "r.json").status().message().rfind(
            "r.json: not a timeline (\"timeline\" with end, dropped, generations, events, samples): ", 0) == 0);
  CHECK(ParseTimeline("[", "r.json").status().message() == "r.json: not a JSON object");
}

TEST_CASE("run report: the record's ending gives the command, the start and how it ended", "[run_report]") {
  RecordEnding e;
  e.summary = "dslaunch: job failed; first failure at 2026-12-01 22:52:16.327 UTC\n"
              "  host beta, rank 1, pid 7: exited with code 3\n"
              "  last 1 line of rank 1:\n    | <boom>\n";
  e.argv = {"python3", "-u", "train.py", "--name", "my run"};
  e.started = 1796165536;  // 2026-12-01 22:52:16 UTC
  Result<std::string> record = WithEnding(*WithTimeline(JobViewJson(Summary()), Timeline()), e);
  REQUIRE(record.ok());
  Result<RecordEnding> back = ParseEnding(*record, "r.json");
  REQUIRE(back.ok());
  CHECK(back->summary == e.summary);
  CHECK(back->argv == e.argv);
  CHECK(back->started == e.started);
  CHECK(ParseJobViewJson(*record).ok());  // status still reads the record
  const std::string html = RunReportHtml(Summary(), Timeline(), *back);
  CHECK(Has(html, "<tr><th>command</th><td><code>python3 -u train.py --name &#39;my run&#39;</code></td></tr>"));
  CHECK(Has(html, "<tr><th>started</th><td>2026-12-01 22:52:16 UTC</td></tr>"));
  CHECK(Has(html, "<h2>How it ended</h2>\n<pre class=\"ending\">dslaunch: job failed; first failure at "
                  "2026-12-01 22:52:16.327 UTC\n  host beta, rank 1, pid 7: exited with code 3\n"
                  "  last 1 line of rank 1:\n    | &lt;boom&gt;\n</pre>"));
  CHECK(Has(html, "<tr><th>ranks</th><td>world size 2</td></tr>"));  // ended: no "0 running"
  // A record without an ending (an older dslaunch): no such parts.
  Result<RecordEnding> none = ParseEnding(JobViewJson(Summary()), "r.json");
  REQUIRE(none.ok());
  CHECK(none->summary.empty());
  CHECK(RunReportHtml(Summary(), Timeline()).find("How it ended") == std::string::npos);
  CHECK(ParseEnding("{\"ending\": {\"summary\": 1}}", "r.json").status().message().rfind(
            "r.json: not an ending (\"ending\" with summary, argv, started): ", 0) == 0);
}

TEST_CASE("run report: the loss and accuracy over steps, the step-time strip, where the files are", "[run_report]") {
  RunTimeline t = Timeline();
  t.metric_rank = 0;
  t.losses = {{10, 2.0}, {30, 1.0}};
  t.accuracies = {{30, 0.8}};
  t.strip_ranks = {0, 1};
  t.strip = {{2, {0.1, 0.1}}, {6, {0.1, 0.3}}};
  t.strip_ranks_left_out = 3;
  RecordEnding e;
  e.command_line = {"dslaunch", "--hostfile", "hosts", "train.yaml"};
  e.job_file = "train.yaml";
  e.hostfile = "hosts";
  e.version = "0.9.0";
  e.log_dir = "/tmp/logs";
  e.checkpoint_dir = "ckpt-{host}";
  e.stacks_path = "/tmp/logs/stacks.gen0.txt";
  e.hang_stacks = "rank 1 <stuck>\n";
  e.hang_report = {"1 of 2 ranks elsewhere: rank 1 (beta) in <read>", "1 rank in train_step"};
  Result<std::string> record = WithEnding(*WithTimeline(JobViewJson(Summary()), t), e);
  REQUIRE(record.ok());
  Result<RunTimeline> back = ParseTimeline(*record, "r.json");
  Result<RecordEnding> ending = ParseEnding(*record, "r.json");
  REQUIRE(back.ok());
  REQUIRE(ending.ok());
  const std::string html = RunReportHtml(Summary(), *back, *ending);
  CHECK(html == RunReportHtml(Summary(), t, e));  // the record keeps all of it
  CHECK(Has(html, "<tr><th>command line</th><td><code>dslaunch --hostfile hosts train.yaml</code></td></tr>"));
  CHECK(Has(html, "<tr><th>job file</th><td><code>train.yaml</code></td></tr>"));
  CHECK(Has(html, "<tr><th>hostfile</th><td><code>hosts</code></td></tr>"));
  CHECK(Has(html, "<tr><th>duration</th><td>10.0 s</td></tr>"));
  CHECK(Has(html, "<tr><th>dslaunch</th><td>0.9.0</td></tr>"));
  // loss: steps 10..30 over x 170..930, 0..2 up the y axis (16..186)
  CHECK(Has(html, "<title>loss over steps, rank 0's</title>"));
  CHECK(Has(html, "<polyline class=\"loss\" points=\"170.0,16.0 930.0,101.0\"/>"));
  CHECK(Has(html, "<g class=\"last\"><title>step 30: loss 1</title>"));
  CHECK(Has(html, "<g class=\"last\"><title>step 30: accuracy 80.00%</title>"));
  CHECK(Has(html, ">100%</text>"));
  // rank 1 took 3x the (lower) median from 6 s to the end; rank 0 never lagged
  CHECK(Has(html, "<rect class=\"lag3\" x=\"626.0\" y=\"23.0\" width=\"304.0\" height=\"12.0\">"
                  "<title>rank 1 at 6.0 s: 0.300 s per step, 3.0x the median</title></rect>"));
  CHECK(Has(html, "<text class=\"host\" x=\"162.0\" y=\"33.0\">rank 1 (beta)</text>"));
  CHECK(Has(html, "<rect class=\"lag0\" x=\"322.0\" y=\"9.0\" width=\"304.0\" height=\"12.0\">"
                  "<title>rank 0 at 2.0 s: 0.100 s per step, 1.0x the median</title></rect>"));
  CHECK(Has(html, "3 more ranks not shown (the record keeps the first 64)."));
  CHECK(Has(html, "<tr><th>logs</th><td><code>/tmp/logs</code> (one file per rank)</td></tr>"));
  CHECK(Has(html, "<tr><th>hang stacks</th><td><code>/tmp/logs/stacks.gen0.txt</code></td></tr>"));
  CHECK(Has(html, "<tr><th>checkpoints</th><td><code>ckpt-{host}</code></td></tr>"));
  CHECK(Has(html, "<summary>every rank's stacks at the last hang</summary><pre>rank 1 &lt;stuck&gt;\n</pre>"));
  CHECK(Has(html, "<h3>The last hang: ranks grouped by stack</h3>\n<pre class=\"hang-report\">1 of 2 ranks "
                  "elsewhere: rank 1 (beta) in &lt;read&gt;\n1 rank in train_step\n</pre>"));
  CHECK(html.find("<script") == std::string::npos);
  // Nothing said: a line saying how to get the curves, no empty picture.
  const std::string bare = RunReportHtml(Summary(), Timeline(), e);
  CHECK(Has(bare, "<p>No rank said a loss (dstrain does;"));
  CHECK(Has(bare, "<p>No rank reported a step time"));
  CHECK(bare.find("<svg class=\"loss\"") == std::string::npos);
  // Stacks kept only in the record (no log directory): said so, shown in the page.
  e.stacks_path.clear();
  CHECK(Has(RunReportHtml(Summary(), t, e), "<tr><th>hang stacks</th><td>in this page (below)</td></tr>"));
}

TEST_CASE("run report: a record's stacks are cut at 64 KiB", "[run_report]") {
  RecordEnding e;
  e.hang_stacks = std::string(RecordEnding::kMaxStacksText + 10, 'x');
  Result<RecordEnding> back = ParseEnding(*WithEnding(JobViewJson(Summary()), e), "r.json");
  REQUIRE(back.ok());
  CHECK(back->hang_stacks == std::string(RecordEnding::kMaxStacksText, 'x') + "\n[cut at 64 KiB]\n");
}

}  // namespace
}  // namespace ds
