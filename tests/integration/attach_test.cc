// `dslaunch attach` (launcher/cmd/attach_cmd.h) against a real job of two
// ranks on 127.0.0.1-2: a second process follows it from its attach files
// (the history, the live lines, the summary) and exits with the job's code;
// the files go with the job; a key that is not the job's, or a node the job
// does not have, is refused by the coordinator and the job goes on.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/integration/proc_harness.h"
#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"

namespace ds::testing {
namespace {

using std::chrono::seconds;

struct AttachBed {
  TempDir dir{"attach"};
  std::string xdg = dir / "xdg";
  std::vector<std::pair<std::string, std::string>> env = JobEnv(dir);
  AttachBed() {
    REQUIRE(::mkdir(xdg.c_str(), 0700) == 0);
    env.push_back({"XDG_RUNTIME_DIR", xdg});
  }
  // The job's attach files (names), once all three are there.
  std::vector<std::string> Files() const {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(xdg + "/dslaunch", ec))
      if (e.path().filename().string().find(".attach.") != std::string::npos)
        out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
};

// Ranks say "ready", wait for a line on the FIFO `go`, say "done"; rank 0
// exits 0, and rank 1, once rank 0 has said it (a line on the FIFO `said`), exits 7.
std::vector<std::string> JobArgv(const AttachBed& b) {
  REQUIRE(::mkfifo((b.dir / "go").c_str(), 0600) == 0);
  REQUIRE(::mkfifo((b.dir / "said").c_str(), 0600) == 0);
  const std::string said = b.dir / "said";
  return {DslaunchPath(), "--hostfile", HostfileFor(b.dir, 2, 1), "--", "/bin/sh", "-c",
          "echo ready; read x < " + (b.dir / "go") + "; echo done $RANK; [ $RANK = 0 ] && { echo > " + said +
              "; exit 0; }; read y < " + said + "; exit 7"};
}

void Release(const AttachBed& b) {
  const int fd = ::open((b.dir / "go").c_str(), O_WRONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, "\n\n", 2) == 2);
  ::close(fd);
}

TEST_CASE("dslaunch attach follows a running job: its history, its lines, its summary and its exit code",
          "[attach]") {
  AttachBed b;
  Child job = Spawn(JobArgv(b), b.dir.path(), b.env);
  REQUIRE(WaitForText(job.out_path, "127.0.0.2:1 ready", seconds(60)));
  std::vector<std::string> files = b.Files();
  REQUIRE(files.size() == 3);
  const std::string id = files[0].substr(0, files[0].find('.'));
  CHECK(files == std::vector<std::string>{id + ".attach.0", id + ".attach.1", id + ".attach.leader"});
  struct stat st;
  REQUIRE(::stat((b.xdg + "/dslaunch/" + files[2]).c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);

  Child attach = Spawn({DslaunchPath(), "attach"}, b.dir.path(), b.env);
  REQUIRE(WaitForText(attach.err_path, "dslaunch attach: no restart so far\n", seconds(30)));
  const std::string head = ReadFile(attach.err_path);
  INFO(head);
  CHECK(head.find("dslaunch attach: following job " + id + " at 127.0.0.1:") != std::string::npos);
  CHECK(head.find("dslaunch attach: job " + id + ": running generation 0, world size 2 on 2 nodes, for ") !=
        std::string::npos);
  Release(b);
  CHECK(WaitExit(attach.pid, seconds(60)) == 7);
  CHECK(WaitExit(job.pid, seconds(60)) == 7);
  const std::string out = ReadFile(attach.out_path), err = ReadFile(attach.err_path);
  INFO(out + err);
  CHECK(out.find("127.0.0.1:0 done 0\n") != std::string::npos);  // live, with the job's own prefixes
  CHECK(out.find("127.0.0.2:1 done 1\n") != std::string::npos);
  CHECK(err.find("  host 127.0.0.2, rank 1, pid ") != std::string::npos);  // the job's summary
  CHECK(err.find("dslaunch: exit code 7\n") != std::string::npos);

  CHECK(b.Files().empty());  // the agents and the leader took theirs away
  Child again;
  CHECK(Run({DslaunchPath(), "attach"}, b.dir.path(), &again, seconds(30), b.env) == 1);
  CHECK(ReadFile(again.err_path).find("dslaunch: error: attach: no job of yours runs on this host: ") !=
        std::string::npos);
  // Named, the ended job is told from its record, with its exit code.
  Child named;
  CHECK(Run({DslaunchPath(), "attach", id.substr(0, 6)}, b.dir.path(), &named, seconds(30), b.env) == 7);
  const std::string told = ReadFile(named.err_path);
  INFO(told);
  CHECK(told.find("dslaunch attach: job " + id + " ended already; its record here says:\n") != std::string::npos);
  CHECK(told.find("  host 127.0.0.2, rank 1, pid ") != std::string::npos);
}

TEST_CASE("dslaunch attach: a key that is not the job's, or a node it does not have, is refused; the job goes on",
          "[attach]") {
  AttachBed b;
  Child job = Spawn(JobArgv(b), b.dir.path(), b.env);
  REQUIRE(WaitForText(job.out_path, "127.0.0.2:1 ready", seconds(60)));
  REQUIRE(b.Files().size() == 3);
  const std::string leader_file = b.Files()[2];
  const std::string text = ReadFile(b.xdg + "/dslaunch/" + leader_file);
  const size_t key = text.find("key ") + 4;

  // A second private directory holding forged copies of the leader's file.
  const std::string forged = b.dir / "forged";
  REQUIRE(::mkdir(forged.c_str(), 0700) == 0);
  REQUIRE(::mkdir((forged + "/dslaunch").c_str(), 0700) == 0);
  auto env = b.env;
  env.back().second = forged;
  auto attach = [&](const std::string& name, const std::string& body) {
    std::filesystem::remove_all(forged + "/dslaunch");
    REQUIRE(::mkdir((forged + "/dslaunch").c_str(), 0700) == 0);
    WriteFile(forged + "/dslaunch/" + name, body);
    ::chmod((forged + "/dslaunch/" + name).c_str(), 0600);
    Child c;
    const int code = Run({DslaunchPath(), "attach", "--wait", "0"}, b.dir.path(), &c, seconds(30), env);
    return std::make_pair(code, ReadFile(c.err_path));
  };
  std::string wrong = text;
  wrong[key] = wrong[key] == 'a' ? 'b' : 'a';
  auto [code, err] = attach(leader_file, wrong);
  INFO(err);
  CHECK(code == 1);
  CHECK(err.find("authentication failed (wrong secret or token)") != std::string::npos);

  std::string node9 = text;
  node9.replace(node9.find("node leader"), 11, "node 9");
  const std::string id = leader_file.substr(0, leader_file.find('.'));
  auto [code9, err9] = attach(id + ".attach.9", node9);
  INFO(err9);
  CHECK(code9 == 1);
  CHECK(err9.find("no attach key for node 9") != std::string::npos);

  Release(b);  // the job never noticed
  CHECK(WaitExit(job.pid, seconds(60)) == 7);
  CHECK(ReadFile(job.out_path).find("127.0.0.1:0 done 0\n") != std::string::npos);
}

}  // namespace
}  // namespace ds::testing
