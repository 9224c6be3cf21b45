// Python frames for hang stacks (agent/stacks/python_stack.h), without processes:
// which process is CPython (from real /proc/PID/maps lines), gdb's command
// line, why a gdb run left no frames (its real output), the rank's text
// with both sections within the bound, split fairly, and reading the dump
// back: what else stands at its path (a link, a FIFO) is refused, not used.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "agent/stacks/python_stack.h"

namespace ds {
namespace {

TEST_CASE("python stack: CPython 3 is told from its executable or its library in the maps") {
  // Debian's /usr/bin/python3.11 (libpython linked in), a pyenv 3.7 and 3.13, an embedding program.
  CHECK(CPythonInMaps("00400000-0041f000 r--p 00000000 fe:00 247970                             /usr/bin/python3.11\n"
                      "7f6976856000-7f697687c000 r--p 00000000 fe:00 332835     /usr/lib/x86_64-linux-gnu/libc.so.6\n") ==
        "python3.11");
  CHECK(CPythonInMaps("558764d08000-558764d09000 r--p 00000000 fe:00 99608  /root/.pyenv/versions/3.7.16/bin/python3.7m\n") ==
        "python3.7");
  CHECK(CPythonInMaps("55d1c6a0f000-55d1c6a10000 r--p 00000000 fe:00 1 /usr/bin/uwsgi-core\n"
                      "7f12a0000000-7f12a0100000 r-xp 00000000 fe:00 2 /opt/py/lib/libpython3.13.so.1.0\n") == "python3.13");
  CHECK(CPythonInMaps("00400000-0041f000 r-xp 00000000 fe:00 3 /usr/bin/python3.12 (deleted)\n") == "python3.12");
  // Not CPython 3: dstrain, PyPy, Python 2, a name that only starts like it, a file named python3.
  CHECK(CPythonInMaps("55d1c6a0f000-55d1c6a10000 r-xp 00000000 fe:00 4 /work/build/runtime/dstrain\n"
                      "7f3c9a000000-7f3c9a100000 r-xp 00000000 fe:00 5 /usr/lib/libgloo.so\n[heap]\n[vdso]\n")
            .empty());
  CHECK(CPythonInMaps("7f12a0000000-7f12a0100000 r-xp 00000000 fe:00 6 /opt/pypy/bin/libpypy3.9-c.so\n").empty());
  CHECK(CPythonInMaps("00400000-0041f000 r-xp 00000000 fe:00 7 /usr/bin/python2.7\n").empty());
  CHECK(CPythonInMaps("00400000-0041f000 r-xp 00000000 fe:00 8 /home/u/python3.11-tools/run\n").empty());
  CHECK(CPythonInMaps("00400000-0041f000 r-xp 00000000 fe:00 9 /opt/bin/python3\n"
                      "7f12a0000000-7f12a0100000 r-xp 00000000 fe:00 10 /opt/lib/libpython3.so\n")
            .empty());
}

TEST_CASE("python stack: gdb calls CPython's dumper on a new file, the worker's errno kept") {
  const std::vector<std::string> cmd = PythonDumpCommand("/usr/bin/gdb", 42, "/tmp/d \"x\"\\y/pid42.txt");
  const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  CHECK(cmd == std::vector<std::string>{
                   "/usr/bin/gdb", "-p", "42", "-batch", "-nx", "-iex", "set debuginfod enabled off",
                   "-iex", "set auto-load off", "-iex", "set auto-solib-add off",
                   "-ex", "sharedlibrary /libc\\.so", "-ex", "sharedlibrary /libpython3",
                   "-ex", "set scheduler-locking on", "-ex", "set unwindonsignal on",
                   "-ex", "handle SIGSTOP nostop noprint nopass",
                   "-ex", "set $dsl_rax = $rax", "-ex", "set $dsl_orig_rax = $orig_rax",
                   "-ex", "set $dsl_errno = (int*)((int*(*)(void))__errno_location)()",
                   "-ex", "set $dsl_saved_errno = *$dsl_errno",
                   "-ex", fmt::format("set $dsl_fd = (int)open(\"/tmp/d \\\"x\\\"\\\\y/pid42.txt\", {}, 0600)", flags),
                   "-ex", "printf \"dsl-fd %d\\n\", $dsl_fd",
                   "-ex", "print (char*)_Py_DumpTracebackThreads($dsl_fd, 0, 0)",
                   "-ex", "print (int)close($dsl_fd)",
                   "-ex", "set *$dsl_errno = $dsl_saved_errno",
                   "-ex", "set $dsl_restart = $dsl_rax == -512 || $dsl_rax == -513 || $dsl_rax == -514 || $dsl_rax == -516",
                   "-ex", "set $pc = $dsl_restart ? $pc - 2 : $pc",
                   "-ex", "set $rax = $dsl_restart ? ($dsl_rax == -516 ? 219 : $dsl_orig_rax) : $rax",
                   "-ex", "set $orig_rax = $dsl_restart ? -1 : $orig_rax"});
}

TEST_CASE("python stack: why gdb left no frames, from its own output") {
  // gdb 13 on `sleep 30` (no CPython in it), as the agent runs it.
  const std::string no_symbol =
      "[Thread debugging using libthread_db enabled]\n"
      "Using host libthread_db library \"/lib/x86_64-linux-gnu/libthread_db.so.1\".\n"
      "__GI___clock_nanosleep (clock_id=clock_id@entry=0, flags=flags@entry=0, req=0x7ffd7f9d3140, "
      "rem=0x7ffd7f9d3180) at ../sysdeps/unix/sysv/linux/clock_nanosleep.c:71\n"
      "71\t../sysdeps/unix/sysv/linux/clock_nanosleep.c: No such file or directory.\n"
      "dsl-fd 3\n"
      "No symbol \"_Py_DumpTracebackThreads\" in current context.\n"
      "$1 = 0\n"
      "[Inferior 1 (process 24774) detached]\n";
  CHECK(WhyNoPythonFrames(no_symbol) ==
        "gdb: No symbol \"_Py_DumpTracebackThreads\" in current context. (an interpreter that does not export it, "
        "or not CPython)");
  // On a pid that is gone; under yama ptrace_scope 2 or 3 it reads "ptrace: Operation not permitted.".
  CHECK(WhyNoPythonFrames("ptrace: No such process.\nTarget 'None' cannot support this command.\n"
                          "No symbol table is loaded.  Use the \"file\" command.\n") == "gdb: ptrace: No such process.");
  CHECK(WhyNoPythonFrames("0x000000000052b8bd in _PyEval_EvalFrameDefault ()\ndsl-fd -1\n$1 = 0x0\n$2 = -1\n") ==
        "the worker could not create its dump file in the agent's directory");
  CHECK(WhyNoPythonFrames("dsl-fd 3\n$1 = 0x7f3c9a6e5d7f \"unable to get the interpreter state\"\n$2 = 0\n") ==
        "CPython's dumper: unable to get the interpreter state");
  CHECK(WhyNoPythonFrames("[New LWP 24788]\n\n[timed out]\n") == "gdb did not finish by the deadline");
  CHECK(WhyNoPythonFrames("something odd\x1b[2J\n\n") == "gdb: something odd\\x1b[2J");
  CHECK(WhyNoPythonFrames("") == "gdb printed nothing");
}

const char kDump[] =
    "Thread 0x00007fc9214bb6c0 (most recent call first):\n"
    "  File \"/tmp/pyf/spin.py\", line 4 in helper\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 975 in run\n"
    "\n"
    "Current thread 0x00007fc921776040 (most recent call first):\n"
    "  File \"/tmp/pyf/spin.py\", line 6 in spin_here\n"
    "  File \"/tmp/pyf/spin.py\", line 9 in <module>\n";

TEST_CASE("python stack: the Python section first, then the native one, both whole when they fit") {
  const std::string native = "PID 10 - process\nTID 10:\n#0  0x1 _PyEval_EvalFrameDefault\n";
  CHECK(JoinSections(kDump, native, "eu-stack", 32768) ==
        std::string("Python frames (faulthandler's dump via gdb):\n") + kDump + "\nNative frames (eu-stack):\n" + native);
  CHECK(WithoutPythonFrames("gdb not found in PATH (Debian: gdb)", native, "eu-stack") ==
        "Python frames: none (gdb not found in PATH (Debian: gdb))\nNative frames (eu-stack):\n" + native);
}

TEST_CASE("python stack: over the bound, the smaller section stays whole; Python keeps its end, native its start") {
  const std::string header = "Python frames (faulthandler's dump via gdb):\n";
  const std::string big_native = std::string(1000, 'n');
  // The Python dump is small: whole; the native one gets the rest.
  const std::string a = JoinSections(kDump, big_native, "gdb", 800);
  CHECK(a == header + kDump + "\nNative frames (gdb):\n" + big_native.substr(0, 800 - (sizeof(kDump) - 1)) + "\n[cut]\n");
  // Both big: half each; the Python dump's end (the main thread, listed last) from a line start.
  std::string big_python;
  for (int i = 0; i < 40; ++i) big_python += fmt::format("  File \"t.py\", line {} in f{}\n", i, i);
  const std::string b = JoinSections(big_python, big_native, "eu-stack", 400);
  const std::string python = b.substr(header.size(), b.find("\nNative frames (eu-stack):\n") - header.size());
  CHECK(python.rfind("[cut]\n  File \"t.py\", line ", 0) == 0);
  CHECK(python.size() <= 200);
  CHECK(python.size() > 200 - 40);
  const std::string last = "  File \"t.py\", line 39 in f39\n";
  CHECK(python.substr(python.size() - last.size()) == last);
  CHECK(b.substr(b.size() - 207) == std::string(200, 'n') + "\n[cut]\n");
  // A cut that falls on a line start keeps that line.
  CHECK(JoinSections("aaaaaaaaaa\nbbbb\n", "", "gdb", 11) == header + "[cut]\nbbbb\n\nNative frames (gdb):\n");
}

TEST_CASE("python stack: the dump is read back bounded and removed; a link or a FIFO in its place is refused") {
  char dir_template[] = "/tmp/dsl-pyread-test.XXXXXX";
  const std::string dir = ::mkdtemp(dir_template);
  const std::string dump = dir + "/rank0.py", secret = dir + "/secret";
  auto write = [](const std::string& path, const std::string& text) { std::ofstream(path) << text; };
  auto exists = [](const std::string& path) { return ::access(path.c_str(), F_OK) == 0; };
  std::string why;
  write(dump, "Thread 0x1 (most recent call first):\n  File \"x.py\", line 3 in f\n");
  CHECK(ReadDumpFile(dump, 4096, &why) == "Thread 0x1 (most recent call first):\n  File \"x.py\", line 3 in f\n");
  CHECK(why.empty());
  CHECK_FALSE(exists(dump));
  write(dump, std::string(100, 'a') + "\nthe end\n");
  const std::string cut = ReadDumpFile(dump, 20, &why);
  CHECK(cut.size() <= 30);
  CHECK(cut.find("the end\n") != std::string::npos);
  CHECK(cut.find("[cut]") != std::string::npos);

  write(secret, "not for the report\n");
  REQUIRE(::symlink(secret.c_str(), dump.c_str()) == 0);
  CHECK(ReadDumpFile(dump, 4096, &why).empty());
  CHECK(why.find(dump) != std::string::npos);  // ELOOP, said
  CHECK_FALSE(exists(dump));
  CHECK(exists(secret));  // the target untouched

  REQUIRE(::mkfifo(dump.c_str(), 0600) == 0);  // nobody writes it: a blocking open would hang
  why.clear();
  CHECK(ReadDumpFile(dump, 4096, &why).empty());
  CHECK(why == dump + " is not a regular file of this user's");
  CHECK_FALSE(exists(dump));

  why = "stale";
  CHECK(ReadDumpFile(dump, 4096, &why).empty());  // none: gdb's own output says why
  CHECK(why.empty());
  ::unlink(secret.c_str());
  ::rmdir(dir.c_str());
}

}  // namespace
}  // namespace ds
