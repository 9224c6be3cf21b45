// The hang report: every rank's stacks (as the agents took them with
// eu-stack or gdb, wire Stacks) grouped by where the rank's training (or main) thread is,
// and the odd ones out said first, one line each:
//   rank 5 (w2): in ds::rt::Mlp::Backward, step 1201
//   7 others: in gloo::transport::tcp::UnboundBuffer::waitRecv (innermost: pthread_cond_wait), step 1201
// Ranks group by "where" and last step. A rank's "where" is its RankThreadFrames with addresses, offsets,
// arguments and symbol versions stripped (normalised: the same code stuck
// at the same place reads the same on every node); its summary is the
// innermost frame that is not a libc wait or syscall wrapper. A CPython
// rank's text begins with its Python frames (agent/stacks/python_stack.h); then
// its "where" is the Python frames of its main thread instead, as
// "stuck.py:12 in spin", and its summary the innermost of them:
//   rank 2 (w2): in stuck.py:17 in spin_in_user_code, step 30
// The largest group is "N others" (all ranks: "all N ranks"). Pure
// functions; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ds {

struct HangStack {
  int rank = 0;
  std::string host;   // what the user calls its node
  int64_t step = -1;  // its last step (-1: none)
  std::string tool;   // "eu-stack", "gdb"; "" = no stack (text says why)
  std::string text;   // the tool's output
};

// The normalised frames, innermost first, of the thread of an eu-stack or gdb
// dump that shows where the rank is: the one named kTrainingThreadName
// (common/training_thread.h: dstrain trains on it while its main thread
// waits), else the main thread (empty when the text has no frame).
std::vector<std::string> RankThreadFrames(const std::string& text);
// The Python frames, innermost first, as "file.py:12 in func" (the file's
// base name), of the main thread in a rank's text: the last thread of
// faulthandler's dump, which lists the newest first (the thread marked
// "Current thread" is the one gdb made the call in, also the main one);
// empty when the text has no Python section, the main thread has no Python
// frame, or the dump was cut at faulthandler's 100 threads.
std::vector<std::string> PythonMainFrames(const std::string& text);
// "in <frame>" for the innermost frame that is not a wait, with " (innermost:
// <frame>)" when a wait or libc internal (__name) is below it; "in
// <innermost Python frame>" when the rank has Python frames; "no stack (<why>)" without a stack.
std::string WhereOf(const HangStack& s);
// The report's lines, odd groups first (at most kMaxGroupLines of them), the
// largest group last.
std::vector<std::string> HangReportLines(const std::vector<HangStack>& stacks);
// The hosts of the ranks outside the largest group, in the report's order;
// "every node" when all ranks are in one group. The failure names them.
std::string OddHosts(const std::vector<HangStack>& stacks);
// Every rank's whole dump, for the log directory: a header per rank, then its text.
std::string StacksFileText(const std::vector<HangStack>& stacks);

inline constexpr size_t kMaxGroupLines = 8;

}  // namespace ds
