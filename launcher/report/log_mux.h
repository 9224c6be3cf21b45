// LogMux: every worker line goes to the launcher's stdout (the worker's
// stdout) or stderr (its stderr), prefixed "host:rank " (colored per rank on
// a TTY unless DSLAUNCH_COLOR=never; always with DSLAUNCH_COLOR=always) and,
// with a log dir, to <dir>/rank<N>.stdout.log and rank<N>.stderr.log (no
// prefix), as torchrun keeps a worker's streams apart. Lines are written
// whole. The per-rank files are written on the caller's thread and keep every
// line; the terminal streams are written by TerminalWriter threads, so a
// stalled reader never blocks the caller: past terminal_queue_bytes waiting
// for the reader, lines are dropped from the terminal (counted, the gap
// marked by one "dslaunch: N lines not shown here" line), never from the
// files. With terminal_local_ranks (torchrun's --local-ranks-filter) only
// those local ranks' lines reach the terminal; with `redirects` (torchrun's
// -r) the streams it names go to the files only. The files still get every
// line.
// A progress update (a worker's '\r' line in progress, LogMux::Progress) is
// drawn in place on a terminal, "\r\033[K" + prefix + text with no newline;
// the same rank's next update redraws it, its completed line replaces it, and
// any other line first ends it with "\n", so a prefix is never erased and
// two lines never mix. When stdout and stderr are both terminals they are
// taken as one (an open line on one is ended before a line on the other).
// Off a terminal, and in the files, updates are dropped: only completed lines.
// With status_line and stderr a terminal, LogMux owns the bottom line of the
// terminal: SetStatus() draws dslaunch's status line there, and every line
// for the terminal (workers' on either stream, Notice()'s) erases it, is
// written, and redraws it, as one unit through one writer (stdout's lines
// too when stdout is the terminal as well, so nothing interleaves). A
// progress update is then a whole line just above the status line, redrawn
// by moving up one line ("\033[A\r\033[K").
// Not thread-safe: the coordinator's io thread only.
#pragma once

#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/report/stream_spec.h"
#include "launcher/report/terminal_writer.h"

namespace ds {

// What else sees what the terminal is shown: the `dslaunch attach` clients
// (launcher/coordinator/attach_hub.h). Called on LogMux's thread.
class LineFollower {
 public:
  virtual ~LineFollower() = default;
  // A worker's completed line that passed the terminal's filters, with its rank's host and local rank.
  virtual void OnLine(int rank, const std::string& host, int local_rank, int stream, const std::string& line) = 0;
  // A line of dslaunch's own (Notice).
  virtual void OnNotice(const std::string& line) = 0;
};

struct LogMuxOptions {
  std::string log_dir;       // "" = no per-rank files
  std::string color = "auto";  // auto | always | never (DSLAUNCH_COLOR)
  FILE* out = stdout;        // where prefixed stdout lines go
  bool out_is_tty = false;   // decides "auto"
  size_t terminal_queue_bytes = 8u << 20;  // per stream: text waiting for a slow reader; more is dropped from it
  std::vector<int> terminal_local_ranks;  // only these local ranks' lines reach the terminal; empty = every rank
  FILE* err = stderr;        // where prefixed stderr lines go
  bool err_is_tty = false;
  StreamSpec redirects;      // these streams of these local ranks go to the files only (-r)
  bool status_line = false;  // keep SetStatus()'s line at the bottom of stderr when err_is_tty
};

class LogMux {
 public:
  explicit LogMux(LogMuxOptions options);
  ~LogMux();
  // Creates the log dir (and parents). Error names the directory.
  Status Open();
  // Declares a rank, its host and its local rank on that host (before its
  // lines arrive; again at each generation); opens its file. local_rank -1
  // = unknown: shown on stdout whatever the filter.
  void AddRank(int rank, const std::string& host, int local_rank = -1);
  // One line (without newline) of `rank`'s stdout (1) or stderr (2; any
  // other value is taken as stdout).
  void Line(int rank, int stream, const std::string& line);
  // The visible text of `rank`'s line in progress on `stream` (1, 2): drawn
  // in place on a terminal, dropped elsewhere (see above).
  void Progress(int rank, int stream, const std::string& text);
  // A line of dslaunch's own in every per-rank file opened so far (not on
  // stdout), e.g. where a restarted generation begins.
  void Marker(const std::string& line);
  // A line of dslaunch's own (without newline) on stderr, as workers' lines
  // go there: after an open progress line ends, below... never through the
  // status line.
  void Notice(const std::string& line);
  // Draws `text` (one line, no newline) as the status line; nothing unless
  // status_line and stderr is a terminal, or when it is the text drawn.
  void SetStatus(const std::string& text);
  // From now on `f` (null: none; borrowed) sees every line the terminal is shown.
  void Follow(LineFollower* f) { follower_ = f; }
  // Whether SetStatus() draws anything.
  bool status_shown() const { return status_mode_; }
  // Where the per-rank files are ("" = none).
  const std::string& log_dir() const { return opt_.log_dir; }
  // Ends an open progress line, erases the status line (drawn again by the
  // next SetStatus with a new text), waits until stdout has every queued line
  // (for a stalled reader: until it reads), and flushes the files.
  void Flush();
  // Lines dropped from the terminal because its reader fell behind.
  uint64_t dropped_from_terminal() const { return out_->dropped() + err_->dropped(); }
  bool color() const { return color_; }

 private:
  struct RankOut {
    std::string prefix;      // already colored for stdout
    std::string err_prefix;  // and for stderr
    std::string host;
    int local_rank = -1;
    FILE* file[2] = {nullptr, nullptr};  // stdout, stderr
    bool on_terminal[2] = {true, true};  // passes terminal_local_ranks and redirects
  };
  bool Tty(int s) const { return s == 0 ? opt_.out_is_tty : opt_.err_is_tty; }
  TerminalWriter& Writer(int s) { return s == 0 ? *out_ : *err_; }
  // Before text on terminal stream `s` (0 stdout, 1 stderr) from `rank`:
  // what ends or replaces an open progress line ("" when none is open).
  std::string CloseProgress(int s, int rank);
  // Writes `text` (ending in a newline) for terminal stream `s`, around the
  // status line when one is kept.
  void Emit(int s, std::string text);

  LogMuxOptions opt_;
  bool color_ = false;
  bool err_color_ = false;
  std::map<int, RankOut> ranks_;
  std::optional<int> open_[2];  // the rank whose progress line is open on stdout, stderr
  std::unique_ptr<TerminalWriter> out_;
  std::unique_ptr<TerminalWriter> err_;
  bool status_mode_ = false;  // status_line on a terminal stderr
  std::string status_;        // the status line drawn ("" = none)
  LineFollower* follower_ = nullptr;
};

}  // namespace ds
