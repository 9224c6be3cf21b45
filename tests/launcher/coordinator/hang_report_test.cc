// The hang report on real eu-stack and gdb output shapes: frames are
// normalised (addresses, arguments, versions, thread ids dropped; main
// thread only), waits are skipped when naming where a rank is, the odd
// rank is printed first and the rest as "N others", and a rank without a
// stack is its own group with the reason; a CPython rank is where its main
// thread's innermost Python frame is (real dumps of tests/agent/stacks/stack_dump_test.cc's workers).
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

// Taken by the agent's StackDumper (eu-stack, then gdb calling CPython's
// dumper) from two /usr/bin/python3.11 workers of tests/agent/stacks/stack_dump_test.cc:
// one spinning in its own code, one sleeping; each with a loader thread.
const char kSpinning[] = R"py(Python frames (faulthandler's dump via gdb):
Thread 0x00007f4d57e046c0 (most recent call first):
  File "/tmp/dsl-pystack-test.qGhQ4Y/stuck.py", line 9 in load_batches
  File "/usr/lib/python3.11/threading.py", line 975 in run
  File "/usr/lib/python3.11/threading.py", line 1038 in _bootstrap_inner
  File "/usr/lib/python3.11/threading.py", line 995 in _bootstrap

Current thread 0x00007f4d580bf040 (most recent call first):
  File "/tmp/dsl-pystack-test.qGhQ4Y/stuck.py", line 4 in spin_in_user_code
  File "/tmp/dsl-pystack-test.qGhQ4Y/stuck.py", line 11 in <module>

Native frames (eu-stack):
PID 26928 - process
TID 26928 (python3):
#0  0x000000000052b23c _PyEval_EvalFrameDefault
#1  0x00000000005236bb PyEval_EvalCode
#2  0x0000000000647d97
#3  0x00000000006456ef
#4  0x0000000000651770
#5  0x00000000006514bb _PyRun_SimpleFileObject
#6  0x00000000006512e4 _PyRun_AnyFileObject
#7  0x000000000065007f Py_RunMain
#8  0x0000000000627d37 Py_BytesMain
#9  0x00007f4d580e724a __libc_start_call_main
#10 0x00007f4d580e7305 __libc_start_main@@GLIBC_2.34
#11 0x0000000000627bd1 _start
TID 26931 (python3):
#0  0x00007f4d5818f545 clock_nanosleep@GLIBC_2.2.5
#1  0x00000000005d64b4
#2  0x0000000000545963
#3  0x000000000053acbc PyObject_Vectorcall
#4  0x000000000052b9e0 _PyEval_EvalFrameDefault
#5  0x000000000055c9d1 _PyFunction_Vectorcall
#6  0x000000000052f9c1 _PyEval_EvalFrameDefault
#7  0x0000000000584b24
#8  0x0000000000583b68
#9  0x00000000006793cc
#10 0x00000000006543b4
#11 0x00007f4d581491f5 start_thread
#12 0x00007f4d581c98ec __clone3
)py";
const char kWaiting[] = R"py(Python frames (faulthandler's dump via gdb):
Thread 0x00007f47dd9f46c0 (most recent call first):
  File "/tmp/dsl-pystack-test.qGhQ4Y/stuck.py", line 9 in load_batches
  File "/usr/lib/python3.11/threading.py", line 975 in run
  File "/usr/lib/python3.11/threading.py", line 1038 in _bootstrap_inner
  File "/usr/lib/python3.11/threading.py", line 995 in _bootstrap

Current thread 0x00007f47ddcaf040 (most recent call first):
  File "/tmp/dsl-pystack-test.qGhQ4Y/stuck.py", line 7 in wait_for_peers
  File "/tmp/dsl-pystack-test.qGhQ4Y/stuck.py", line 11 in <module>

Native frames (eu-stack):
PID 26929 - process
TID 26929 (python3):
#0  0x00007f47ddd7f545 clock_nanosleep@GLIBC_2.2.5
#1  0x00000000005d64b4
#2  0x0000000000545963
#3  0x000000000053acbc PyObject_Vectorcall
#4  0x000000000052b9e0 _PyEval_EvalFrameDefault
#5  0x00000000005236bb PyEval_EvalCode
#6  0x0000000000647d97
#7  0x00000000006456ef
#8  0x0000000000651770
#9  0x00000000006514bb _PyRun_SimpleFileObject
#10 0x00000000006512e4 _PyRun_AnyFileObject
#11 0x000000000065007f Py_RunMain
#12 0x0000000000627d37 Py_BytesMain
#13 0x00007f47ddcd724a __libc_start_call_main
#14 0x00007f47ddcd7305 __libc_start_main@@GLIBC_2.34
#15 0x0000000000627bd1 _start
TID 26930 (python3):
#0  0x00007f47ddd7f545 clock_nanosleep@GLIBC_2.2.5
#1  0x00000000005d64b4
#2  0x0000000000545963
#3  0x000000000053acbc PyObject_Vectorcall
#4  0x000000000052b9e0 _PyEval_EvalFrameDefault
#5  0x000000000055c9d1 _PyFunction_Vectorcall
#6  0x000000000052f9c1 _PyEval_EvalFrameDefault
#7  0x0000000000584b24
#8  0x0000000000583b68
#9  0x00000000006793cc
#10 0x00000000006543b4
#11 0x00007f47ddd391f5 start_thread
#12 0x00007f47dddb98ec __clone3
)py";

TEST_CASE("hang report: a CPython rank is where its main thread's innermost Python frame is", "[hang]") {
  CHECK(PythonMainFrames(kSpinning) == std::vector<std::string>{"stuck.py:4 in spin_in_user_code", "stuck.py:11 in <module>"});
  CHECK(WhereOf({2, "w2", 30, "eu-stack", kSpinning}) == "in stuck.py:4 in spin_in_user_code");
  CHECK(WhereOf({0, "w0", 30, "eu-stack", kWaiting}) == "in stuck.py:7 in wait_for_peers");
  // The native section alone gives the native frames: faulthandler's "Thread 0x..." lines are not its threads.
  CHECK(RankThreadFrames(kSpinning).front() == "_PyEval_EvalFrameDefault");
  CHECK(RankThreadFrames(kWaiting).front() == "clock_nanosleep");
  CHECK(PythonMainFrames(EuStack(10, "Pair::read")).empty());
}

TEST_CASE("hang report: CPython ranks group by their Python frames, not by where the interpreter is", "[hang]") {
  // Rank 1's native frames read like the spinning rank's (the interpreter caught between two sleeps).
  const std::string waiting = kWaiting;
  const std::string rank1 = waiting.substr(0, waiting.find("\nNative frames")) +
                            std::string(kSpinning).substr(std::string(kSpinning).find("\nNative frames"));
  std::vector<HangStack> s = {{0, "w0", 30, "eu-stack", kWaiting},
                              {1, "w1", 30, "eu-stack", rank1},
                              {2, "w2", 30, "eu-stack", kSpinning}};
  CHECK(HangReportLines(s) == std::vector<std::string>{"rank 2 (w2): in stuck.py:4 in spin_in_user_code, step 30",
                                                       "2 others: in stuck.py:7 in wait_for_peers, step 30"});
  CHECK(OddHosts(s) == "w2");
}

TEST_CASE("hang report: without the main thread's Python frames, the native ones speak", "[hang]") {
  const std::string spinning = kSpinning;
  const std::string native = spinning.substr(spinning.find("\nNative frames") + 1);
  const std::string none = "Python frames: none (python3.11: gdb not found in PATH (Debian: gdb))\n" + native;
  CHECK(PythonMainFrames(none).empty());
  CHECK(WhereOf({2, "w2", 30, "eu-stack", none}) == "in _PyEval_EvalFrameDefault");
  // The main thread outside Python code; faulthandler's 100 threads reached (the main one not listed).
  const std::string header = "Python frames (faulthandler's dump via gdb):\n";
  CHECK(WhereOf({2, "w2", 30, "eu-stack",
                 header + "Thread 0x00007f1 (most recent call first):\n  File \"/x/a.py\", line 3 in f\n\n"
                          "Current thread 0x00007f2 (most recent call first):\n  <no Python frame>\n\n" + native}) ==
        "in _PyEval_EvalFrameDefault");
  CHECK(PythonMainFrames(header + "Thread 0x00007f1 (most recent call first):\n  File \"/x/a.py\", line 3 in f\n\n...\n\n" +
                         native)
            .empty());
  // A dump cut at its start (the agent keeps its end, from a line start).
  CHECK(PythonMainFrames(header + "[cut]\n  File \"/x/a.py\", line 3 in f\n  File \"/x/b.py\", line 9 in <module>\n\n" + native) ==
        std::vector<std::string>{"a.py:3 in f", "b.py:9 in <module>"});
}

}  // namespace
}  // namespace ds
