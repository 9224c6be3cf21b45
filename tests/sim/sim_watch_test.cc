// `dssim --watch` (sim/sim_watch.h) as a real process: while it runs, its
// coordinator serves /metrics (scraped with curl) and the status socket
// (`dslaunch status` from a second process finds the simulated job); when it
// ends the socket is gone.
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>

#include <catch2/catch.hpp>

#include "tests/integration/proc_harness.h"

namespace ds::testing {
namespace {

using std::chrono::seconds;

std::string Output(const std::string& cmd) {
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

TEST_CASE("dssim --watch: /metrics and dslaunch status reach the simulated job's coordinator", "[sim_watch]") {
  TempDir dir("simwatch");
  const std::vector<std::pair<std::string, std::string>> env{{"XDG_RUNTIME_DIR", (dir / "xdg").c_str()}};
  std::filesystem::create_directory(dir / "xdg");
  std::filesystem::permissions(dir / "xdg", std::filesystem::perms::owner_all);
  // A steady window long enough to look in (the silent agent's 5 s timeout follows it).
  Child c = Spawn({DSSIM_TEST_DSSIM, "--agents", "8", "--steady", "20", "--no-store", "--watch"}, dir.path(), env);
  REQUIRE(WaitForText(c.err_path, "/metrics, job dssim\n", seconds(60)));
  std::smatch m;
  const std::string err = ReadFile(c.err_path);
  REQUIRE(std::regex_search(err, m, std::regex(R"(dssim: metrics at http://127\.0\.0\.1:([0-9]+)/metrics)")));
  // Scraped until all 8 agents registered (dssim prints its report only at the end).
  const std::string url = "http://127.0.0.1:" + std::string(m[1]) + "/metrics";
  std::string body;
  const auto deadline = std::chrono::steady_clock::now() + seconds(60);
  for (bool first = true; first || (body.find("dslaunch_agents_registered{job=\"dssim\"} 8\n") == std::string::npos &&
                                    std::chrono::steady_clock::now() < deadline);
       first = false) {
    if (!first) ::poll(nullptr, 0, 200);  // paces the scrapes; the condition is what is waited for
    body = Output("curl -sS -m 20 " + url);
  }
  CHECK(body.find("dslaunch_agents_registered{job=\"dssim\"} 8\n") != std::string::npos);
  CHECK(body.find("# TYPE dslaunch_heartbeat_rtt_seconds gauge\n") != std::string::npos);

  Child status;
  REQUIRE(Run({DslaunchPath(), "status", "dssim"}, dir.path(), &status, seconds(30), env) == 0);
  const std::string table = ReadFile(status.out_path);
  INFO(table);
  CHECK(table.find("job dssim (dslaunch pid ") == 0);
  CHECK(table.find("\n7     sim7                     ") != std::string::npos);

  CHECK(WaitExit(c.pid, seconds(120)) == 0);
  bool socket_left = false;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir / "xdg"))
    socket_left = socket_left || e.path().extension() == ".sock";
  CHECK_FALSE(socket_left);
}

}  // namespace
}  // namespace ds::testing
