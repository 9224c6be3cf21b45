// The hang report on real eu-stack and gdb output shapes: frames are
// normalised (addresses, arguments, versions, thread ids dropped; main
// thread only), waits are skipped when naming where a rank is, the odd
// rank is printed first and the rest as "N others", and a rank without a
// stack is its own group with the reason.
#include <catch2/catch.hpp>

#include "launcher/coordinator/hang_report.h"

namespace ds {
namespace {

std::string EuStack(int pid, const std::string& inner) {
  return "PID " + std::to_string(pid) + " - process\nTID " + std::to_string(pid) +
         ":\n#0  0x00007f3c9a6e5d7f __GI___poll\n#1  0x00007f3c9b000010 " + inner +
         "\n#2  0x000055d1c6a0f1a9 ds::rt::Train\n#3  0x000055d1c6a0f1b0 main\nTID " + std::to_string(pid + 1) +
         ":\n#0  0x00007f3c9a6e5d7f epoll_wait\n#1  0x00007f3c9a6e5d80 gloo::transport::tcp::Loop::run\n";
}

TEST_CASE("hang report: eu-stack and gdb frames normalise to function names, main thread only", "[hang]") {
  CHECK(RankThreadFrames(EuStack(10, "gloo::AllreduceRing<float>::run")) ==
        std::vector<std::string>{"__GI___poll", "gloo::AllreduceRing<float>::run", "ds::rt::Train", "main"});
  const std::string gdb =
      "Thread 1 (Thread 0x7f12 (LWP 77) \"dstrain\"):\n"
      "#0  0x00007f1 in clock_nanosleep@GLIBC_2.2.5 () from /lib/x86_64-linux-gnu/libc.so.6\n"
      "#1  0x00007f2 in Spin (n=3) at spin.c:4\n"
      "#2  0x00007f3 in main () at spin.c:9\n"
      "Thread 2 (Thread 0x7f13 (LWP 78)):\n#0  0x1 in other () at o.c:1\n";
  CHECK(RankThreadFrames("TID 5:\n#0  0x1 __send\n#1  0x2 ds::(anonymous namespace)::Ship(int) - /x/dstrain\n") ==
        std::vector<std::string>{"__send", "ds::{anon}::Ship"});
  CHECK(RankThreadFrames(gdb) == std::vector<std::string>{"clock_nanosleep", "Spin", "main"});
  CHECK(WhereOf({0, "w0", 5, "gdb", gdb}) == "in Spin (innermost: clock_nanosleep)");
  CHECK(WhereOf({0, "w0", 5, "gdb", "#0  0x1 in Spin (n=3) at spin.c:4\n"}) == "in Spin");
  CHECK(WhereOf({0, "w0", 5, "", "eu-stack and gdb not found on w0"}) ==
        "no stack (eu-stack and gdb not found on w0)");
}

TEST_CASE("hang report: the training thread (ds-train) speaks for a rank whose main thread waits for it", "[hang]") {
  const std::string eu =
      "PID 10 - process\nTID 10:\n#0  0x1 __futex_abstimed_wait_common\n#1  0x2 std::thread::join()\n#2  0x3 main\n"
      "TID 11 (dstrain):\n#0  0x4 epoll_wait\nTID 12 (ds-train):\n#0  0x5 __recv\n#1  0x6 gloo::transport::tcp::Pair::read\n";
  CHECK(RankThreadFrames(eu) == std::vector<std::string>{"__recv", "gloo::transport::tcp::Pair::read"});
  CHECK(WhereOf({1, "w1", 7, "eu-stack", eu}) == "in gloo::transport::tcp::Pair::read (innermost: __recv)");
  const std::string gdb =
      "#0  0x1 in __futex_abstimed_wait_common () from libc.so.6\n#1  0x2 in main ()\n"
      "Thread 1 (Thread 0x7f12 (LWP 77) \"dstrain\"):\n#0  0x1 in __futex_abstimed_wait_common ()\n"
      "Thread 2 (Thread 0x7f13 (LWP 78) \"ds-train\"):\n#0  0x9 in ds::rt::Mlp::Backward (this=0x1) at m.cc:3\n";
  CHECK(RankThreadFrames(gdb) == std::vector<std::string>{"ds::rt::Mlp::Backward"});
}

TEST_CASE("hang report: the odd rank first, then the others as one line", "[hang]") {
  std::vector<HangStack> s;
  for (int r = 0; r < 8; ++r)
    s.push_back({r, r < 4 ? "w0" : "w1", 1202, "eu-stack",
                 EuStack(100 + 10 * r, r == 5 ? "gloo::transport::tcp::Pair::recv" : "gloo::AllreduceRing<float>::run")});
  s[5].step = 1201;
  CHECK(OddHosts(s) == "w1");
  CHECK(HangReportLines(s) ==
        std::vector<std::string>{"rank 5 (w1): in gloo::transport::tcp::Pair::recv (innermost: __GI___poll), step 1201",
                                 "7 others: in gloo::AllreduceRing<float>::run (innermost: __GI___poll), step 1202"});
}

TEST_CASE("hang report: a rank a step behind stands apart even where it waits like the others", "[hang]") {
  std::vector<HangStack> s;
  for (int r = 0; r < 3; ++r) s.push_back({r, "w" + std::to_string(r), r == 1 ? 385 : 386, "eu-stack", EuStack(10 * r, "Pair::read")});
  CHECK(HangReportLines(s) == std::vector<std::string>{"rank 1 (w1): in Pair::read (innermost: __GI___poll), step 385",
                                                       "2 others: in Pair::read (innermost: __GI___poll), step 386"});
  CHECK(OddHosts(s) == "w1");
}

TEST_CASE("hang report: one group says all ranks; a rank without a stack stands apart", "[hang]") {
  std::vector<HangStack> s = {{0, "w0", 7, "eu-stack", EuStack(10, "Barrier")},
                              {1, "w1", 7, "eu-stack", EuStack(20, "Barrier")}};
  CHECK(HangReportLines(s) == std::vector<std::string>{"all 2 ranks: in Barrier (innermost: __GI___poll), step 7"});
  CHECK(OddHosts(s) == "every node");
  s.push_back({2, "w1", 6, "", "eu-stack: Operation not permitted"});
  CHECK(HangReportLines(s) == std::vector<std::string>{"rank 2 (w1): no stack (eu-stack: Operation not permitted), step 6",
                                                       "2 others: in Barrier (innermost: __GI___poll), step 7"});
  CHECK(StacksFileText({s[2]}) == "=== rank 2 (w1), step 6, no stack ===\neu-stack: Operation not permitted\n");
}

}  // namespace
}  // namespace ds
