#include "agent/pmi_token.h"

#include <catch2/catch.hpp>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

namespace ds {
namespace {

// A PMI-1 server for one client on a socketpair: answers each request line
// as hydra does and keeps the lines it got; `stored` is the token in its
// key-value space.
struct FakePmi {
  int fds[2];
  std::vector<std::string> got;
  std::string stored;
  std::thread thread;

  explicit FakePmi(std::string preset = "") : stored(std::move(preset)) {
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
    thread = std::thread([this] { Serve(); });
  }
  ~FakePmi() {
    Finish();
    ::close(fds[1]);
  }
  // Closes the client's end and waits for the server: `got` is complete.
  void Finish() {
    if (fds[0] >= 0) ::close(fds[0]);
    fds[0] = -1;
    if (thread.joinable()) thread.join();
  }
  void Serve() {
    std::string line;
    char c;
    while (::read(fds[1], &c, 1) == 1) {
      if (c != '\n') {
        line.push_back(c);
        continue;
      }
      got.push_back(line);
      std::string answer;
      if (line.starts_with("cmd=init")) answer = "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0";
      else if (line == "cmd=get_my_kvsname") answer = "cmd=my_kvsname kvsname=kvs_7_0";
      else if (line.starts_with("cmd=put")) {
        stored = line.substr(line.find("value=") + 6);
        answer = "cmd=put_result rc=0 msg=success";
      } else if (line == "cmd=barrier_in") answer = "cmd=barrier_out";
      else if (line.starts_with("cmd=get ")) answer = "cmd=get_result rc=0 msg=success value=" + stored;
      else if (line == "cmd=finalize") answer = "cmd=finalize_ack";
      else answer = "cmd=unknown rc=-1";
      answer += "\n";
      (void)!::write(fds[1], answer.data(), answer.size());
      line.clear();
      if (answer.starts_with("cmd=finalize_ack")) return;
    }
  }
};

TEST_CASE("pmi token: rank 0 puts the token, the others get it after the barrier", "[agent]") {
  std::string shared;
  {
    FakePmi pmi;
    auto r = TokenThroughPmi(pmi.fds[0], 0, "t0ken");
    REQUIRE(r.ok());
    CHECK(*r == "t0ken");
    pmi.Finish();
    CHECK(pmi.got == std::vector<std::string>{"cmd=init pmi_version=1 pmi_subversion=1", "cmd=get_my_kvsname",
                                              "cmd=put kvsname=kvs_7_0 key=dslaunch-agent-token value=t0ken",
                                              "cmd=barrier_in", "cmd=finalize"});
    shared = pmi.stored;
  }
  FakePmi other(shared);
  auto r = TokenThroughPmi(other.fds[0], 2, "");
  REQUIRE(r.ok());
  CHECK(*r == "t0ken");
}

TEST_CASE("pmi token: a refusal or a closed connection names the command", "[agent]") {
  FakePmi pmi;
  CHECK(TokenThroughPmi(pmi.fds[0], 0, "two words").status().message() ==
        "PMI: rank 0 has no token to share (expected one word on stdin)");
  int closed[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, closed) == 0);
  ::close(closed[1]);
  CHECK(TokenThroughPmi(closed[0], 1, "").status().message().starts_with("PMI cmd=init pmi_version=1"));
  ::close(closed[0]);
}

}  // namespace
}  // namespace ds
