// Python frames via gdb and CPython's own dumper (python_stack.h).
#include "agent/stacks/python_stack.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "agent/stacks/stack_dump.h"
#include "common/env_registry.h"
#include "common/files.h"
#include "common/log.h"
#include "common/process_dirs.h"
#include "common/strings.h"
#include "common/unique_fd.h"
#include "wire/protocol.h"

namespace ds {
namespace {

using Clock = std::chrono::steady_clock;

// gdb needs this long to attach, find the symbols and call (0.2-0.35 s
// measured): with less left it could be killed in the middle of the call,
// which a worker does not survive (it returns into gdb's dummy frame with
// gdb gone: SIGSEGV, tried with a call to sleep()).
constexpr auto kMinGdbTime = std::chrono::seconds(1);
constexpr size_t kMaxGdbOutput = 16 * 1024;
constexpr char kFdTag[] = "dsl-fd ";

// "3.11" -> 11 for the "python3.X" CPythonInMaps returns.
int MinorOf(const std::string& python) { return std::atoi(python.c_str() + std::strlen("python3.")); }

// `s` as a C string literal for gdb's expression parser.
std::string GdbString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// "3.11" when `name` is `prefix` + "3." + digits + lower-case letters (an ABI tag: 3.7m, 3.13t)
// + `tail` (e.g. ".so"; "" = the end), else "".
std::string VersionAfter(const std::string& name, const std::string& prefix, const std::string& tail) {
  if (!StartsWith(name, prefix + "3.")) return "";
  size_t p = prefix.size() + 2, digits = p;
  while (p < name.size() && std::isdigit(static_cast<unsigned char>(name[p]))) ++p;
  if (p == digits) return "";
  const std::string version = name.substr(prefix.size(), p - prefix.size());
  while (p < name.size() && std::islower(static_cast<unsigned char>(name[p]))) ++p;
  if (tail.empty() ? p != name.size() : name.compare(p, tail.size(), tail) != 0) return "";
  return version;
}

// `text` from its second line on, "[cut]" first: the end of a longer text,
// from a line start.
std::string MarkCutHead(const std::string& text) {
  const size_t nl = text.find('\n');
  return "[cut]\n" + (nl == std::string::npos ? std::string() : text.substr(nl + 1));
}

// The end of `text` in at most `n` bytes, from a line start, "[cut]" first.
std::string KeepTail(const std::string& text, size_t n) {
  if (text.size() <= n) return text;
  const size_t keep = n > 6 ? n - 6 : 0;  // "[cut]\n"
  return MarkCutHead(text.substr(text.size() - keep - 1));  // from the byte before: a line start there is kept
}

// The start of `text` in at most `n` bytes, "[cut]" last (as RunBounded marks it).
std::string KeepHead(const std::string& text, size_t n) {
  return text.size() <= n ? text : text.substr(0, n) + "\n[cut]\n";
}

std::string NativeHeader(const std::string& tool) { return fmt::format("{} ({}):\n", msg::kNativeFramesHeader, tool); }

}  // namespace

std::string ReadDumpFile(const std::string& path, size_t max_bytes, std::string* why) {
  // O_NOFOLLOW and O_NONBLOCK: whatever a process of this user put there
  // in its place (a link, a FIFO) is neither followed nor waited for.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  const int open_errno = errno;
  ::unlink(path.c_str());
  if (fd.get() < 0) {
    *why = open_errno == ENOENT ? std::string() : fmt::format("{}: {}", path, std::strerror(open_errno));
    return "";
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
    *why = fmt::format("{} is not a regular file of this user's", path);
    return "";
  }
  const size_t size = static_cast<size_t>(st.st_size);
  const off_t from = static_cast<off_t>(size > max_bytes ? size - max_bytes : 0);
  std::string text(std::min(size, max_bytes), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t r = ::pread(fd.get(), text.data() + got, text.size() - got, from + static_cast<off_t>(got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  text.resize(got);
  return from > 0 ? MarkCutHead(text) : text;
}

std::string CPythonInMaps(const std::string& maps) {
  for (const std::string& line : Split(maps, '\n')) {
    const size_t slash = line.rfind('/');
    if (slash == std::string::npos) continue;
    std::string name = line.substr(slash + 1);
    if (const size_t d = name.find(" (deleted)"); d != std::string::npos) name.resize(d);
    std::string version = VersionAfter(name, "python", "");
    if (version.empty()) version = VersionAfter(name, "libpython", ".so");
    if (!version.empty()) return "python" + version;
  }
  return "";
}

std::vector<std::string> PythonDumpCommand(const std::string& gdb, pid_t pid, const std::string& file) {
  const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;  // this machine's values, as the worker's
  return {gdb, "-p", std::to_string(pid), "-batch", "-nx",
          "-iex", "set debuginfod enabled off", "-iex", "set auto-load off",
          // Only libc's and libpython's symbols (with torch loaded, reading every
          // library's took gdb 1.4 s instead of 0.25 s).
          "-iex", "set auto-solib-add off", "-ex", "sharedlibrary /libc\\.so", "-ex", "sharedlibrary /libpython3",
          "-ex", "set scheduler-locking on",              // the other threads stay stopped
          "-ex", "set unwindonsignal on",                 // a signal in the call: back to where it was
          "-ex", "handle SIGSTOP nostop noprint nopass",  // a stopped worker's pending stop
          // A thread stopped inside an interrupted system call (time.sleep,
          // a poll) returns -ERESTART* to the kernel, which restarts the call
          // on resume; after gdb's calls this kernel (6.18) no longer did, and
          // the worker got OSError 514 (stack_dump_test). So the restart is
          // done here, as the kernel would: the call's number back in rax and
          // the pc on the syscall instruction again (x86-64; elsewhere these
          // lines fail harmlessly and nothing changes).
          "-ex", "set $dsl_rax = $rax", "-ex", "set $dsl_orig_rax = $orig_rax",
          "-ex", "set $dsl_errno = (int*)((int*(*)(void))__errno_location)()",
          "-ex", "set $dsl_saved_errno = *$dsl_errno",
          "-ex", fmt::format("set $dsl_fd = (int)open({}, {}, 0600)", GdbString(file), flags),
          "-ex", fmt::format("printf \"{}%d\\n\", $dsl_fd", kFdTag),
          "-ex", "print (char*)_Py_DumpTracebackThreads($dsl_fd, 0, 0)",
          "-ex", "print (int)close($dsl_fd)",
          "-ex", "set *$dsl_errno = $dsl_saved_errno",
          "-ex", "set $dsl_restart = $dsl_rax == -512 || $dsl_rax == -513 || $dsl_rax == -514 || $dsl_rax == -516",
          "-ex", "set $pc = $dsl_restart ? $pc - 2 : $pc",
          "-ex", "set $rax = $dsl_restart ? ($dsl_rax == -516 ? 219 : $dsl_orig_rax) : $rax",
          "-ex", "set $orig_rax = $dsl_restart ? -1 : $orig_rax"};
}

std::string WhyNoPythonFrames(const std::string& out) {
  if (out.find("\n[timed out]\n") != std::string::npos) return "gdb did not finish by the deadline";
  std::string last;
  for (const std::string& line : Split(out, '\n')) {
    const std::string_view l = Trim(line);
    if (l.empty() || l == "[cut]") continue;
    last = line;
    if (StartsWith(l, "No symbol \"_Py_DumpTracebackThreads\""))
      return fmt::format("gdb: {} (an interpreter that does not export it, or not CPython)", Printable(l));
    if (StartsWith(l, "Couldn't write extended state status"))  // gdb 13 on kernel 6.18: no call into a process
      return "gdb cannot call into a process on this kernel: " + Printable(l);
    if (StartsWith(l, "ptrace:") || StartsWith(l, "Could not attach") ||
        StartsWith(l, "The program being debugged was signaled"))
      return "gdb: " + Printable(l);
    if (l == std::string(kFdTag) + "-1") return "the worker could not create its dump file in the agent's directory";
    // `print` of the dumper's answer: 0x0 on success, else its reason as a string.
    const size_t quote = l.find(" \"");
    if (l[0] == '$' && quote != std::string_view::npos && l.back() == '"' && l.find(" = 0x") != std::string_view::npos)
      return "CPython's dumper: " + Printable(l.substr(quote + 2, l.size() - quote - 3));
  }
  return last.empty() ? "gdb printed nothing" : "gdb: " + Printable(Trim(last));
}

std::string JoinSections(const std::string& python, const std::string& native, const std::string& tool,
                         size_t max_bytes) {
  size_t py = python.size(), nat = native.size();
  if (py + nat > max_bytes) {
    const size_t half = max_bytes / 2;
    if (py <= half) nat = max_bytes - py;
    else if (nat <= half) py = max_bytes - nat;
    else py = max_bytes - half, nat = half;
  }
  std::string text = std::string(msg::kPythonFramesHeader) + "\n" + KeepTail(python, py);
  if (!text.empty() && text.back() != '\n') text += '\n';
  return text + "\n" + NativeHeader(tool) + KeepHead(native, nat);
}

std::string WithoutPythonFrames(const std::string& why, const std::string& native, const std::string& tool) {
  return fmt::format("Python frames: none ({})\n", why) + NativeHeader(tool) + native;
}

PythonFrames::PythonFrames(std::string gdb, size_t max_bytes) : gdb_(std::move(gdb)), max_bytes_(max_bytes) {}

PythonFrames::~PythonFrames() {
  if (!dir_ || !dir_->ok()) return;
  std::error_code ec;  // remove_all does not follow symlinks out of the directory
  std::filesystem::remove_all(**dir_, ec);
  if (ec) DS_LOG(Warn, Proc) << "cannot remove " << **dir_ << ": " << ec.message();
}

Result<std::string> PythonFrames::Dir() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!dir_) {
    auto env = GetAnyEnv("TMPDIR");
    dir_ = MakeProcessDir(env && !env->empty() ? *env : std::string("/tmp"), "dsagent-pystacks.");
  }
  return *dir_;
}

std::string PythonFrames::Add(pid_t pid, const std::string& native, const std::string& tool, Clock::time_point deadline) {
  Result<std::string> maps = ReadTextFile(fmt::format("/proc/{}/maps", pid), "memory map");
  if (!maps.ok()) return native;  // gone: the native dump says so
  const std::string python = CPythonInMaps(*maps);
  if (python.empty()) return native;
  if (MinorOf(python) < 6) return WithoutPythonFrames(python + " is older than 3.6: not tried", native, tool);
  std::string why;
  if (std::optional<std::string> frames = Dump(pid, deadline, &why)) return JoinSections(*frames, native, tool, max_bytes_);
  return WithoutPythonFrames(python + ": " + why, native, tool);
}

std::optional<std::string> PythonFrames::Dump(pid_t pid, Clock::time_point deadline, std::string* why) {
  if (gdb_.empty()) {
    *why = "gdb not found in PATH (Debian: gdb)";
    return std::nullopt;
  }
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left < kMinGdbTime) {
    *why = fmt::format("{} ms of the deadline left, too little for gdb", std::max<int64_t>(left.count(), 0));
    return std::nullopt;
  }
  Result<std::string> dir = Dir();
  if (!dir.ok()) {
    *why = dir.status().message();
    return std::nullopt;
  }
  const std::string file = fmt::format("{}/pid{}.txt", *dir, pid);
  const auto t0 = Clock::now();
  const std::string out = RunBounded(PythonDumpCommand(gdb_, pid, file), kMaxGdbOutput, deadline);
  DS_LOG(Debug, Proc) << "Python frames of pid " << pid << ": gdb took "
                      << std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count() << " ms";
  std::string text = ReadDumpFile(file, max_bytes_, why);
  if (text.find("(most recent call first):") != std::string::npos) return text;
  if (why->empty()) *why = WhyNoPythonFrames(out);
  return std::nullopt;
}

}  // namespace ds
