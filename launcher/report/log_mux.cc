#include "launcher/report/log_mux.h"

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

namespace ds {
namespace {

// Distinct, readable ANSI colors cycled by rank.
constexpr int kColors[] = {36, 33, 35, 32, 34, 31, 96, 93, 95, 92, 94, 91};

}  // namespace

LogMux::LogMux(LogMuxOptions options) : opt_(std::move(options)) {
  auto colored = [&](bool tty) { return opt_.color == "always" || (opt_.color != "never" && tty); };
  color_ = colored(opt_.out_is_tty);
  err_color_ = colored(opt_.err_is_tty);
  const std::string kept =
      opt_.log_dir.empty() ? "--log-dir keeps every line" : "every line is in " + opt_.log_dir + "/rank<N>.*.log";
  out_ = std::make_unique<TerminalWriter>(opt_.out, opt_.terminal_queue_bytes, kept);
  err_ = std::make_unique<TerminalWriter>(opt_.err, opt_.terminal_queue_bytes, kept);
  status_mode_ = opt_.status_line && opt_.err_is_tty;
}

LogMux::~LogMux() {
  if (status_mode_ && !status_.empty()) err_->Write("\r\033[K");
  for (int s = 0; s < 2 && !status_mode_; ++s)
    if (open_[s]) Writer(s).Write("\n");
  out_.reset();  // writes what is queued
  err_.reset();
  for (auto& [rank, r] : ranks_)
    for (FILE* f : r.file)
      if (f) std::fclose(f);
}

Status LogMux::Open() {
  if (opt_.log_dir.empty()) return Status::OK();
  std::error_code ec;
  std::filesystem::create_directories(opt_.log_dir, ec);
  if (ec) return Status::IOError(fmt::format("--log-dir {}: {}", opt_.log_dir, ec.message()));
  return Status::OK();
}

void LogMux::AddRank(int rank, const std::string& host, int local_rank) {
  RankOut& r = ranks_[rank];
  r.host = host;
  r.local_rank = local_rank;
  const auto& only = opt_.terminal_local_ranks;
  const bool shown = only.empty() || local_rank < 0 || std::find(only.begin(), only.end(), local_rank) != only.end();
  const int redirected = opt_.redirects.For(local_rank);
  for (int s = 0; s < 2; ++s) r.on_terminal[s] = shown && (redirected & (1 << s)) == 0;
  const std::string plain = fmt::format("{}:{}", host, rank);
  const std::string colored = fmt::format("\033[{}m{}\033[0m ", kColors[rank % std::size(kColors)], plain);
  r.prefix = color_ ? colored : plain + " ";
  r.err_prefix = err_color_ ? colored : plain + " ";
  if (opt_.log_dir.empty()) return;
  for (int s = 0; s < 2; ++s) {
    if (r.file[s] != nullptr) continue;
    std::string path = fmt::format("{}/rank{}.{}.log", opt_.log_dir, rank, s == 0 ? "stdout" : "stderr");
    r.file[s] = std::fopen(path.c_str(), "ae");  // e: O_CLOEXEC, no worker inherits a rank's log
    if (r.file[s] == nullptr)
      std::fprintf(stderr, "dslaunch: warning: cannot open %s: %s\n", path.c_str(), std::strerror(errno));
  }
}

void LogMux::Line(int rank, int stream, const std::string& line) {
  auto it = ranks_.find(rank);
  if (it == ranks_.end()) {
    AddRank(rank, "?");
    it = ranks_.find(rank);
  }
  const RankOut& r = it->second;
  const int s = stream == 2 ? 1 : 0;
  // Live, also through a pipe: the writers flush after each batch.
  if (r.on_terminal[s]) {
    Emit(s, CloseProgress(s, rank) + (s == 0 ? r.prefix : r.err_prefix) + line + "\n");
    if (follower_) follower_->OnLine(rank, r.host, r.local_rank, s + 1, line);
  }
  if (FILE* f = r.file[s]) {
    std::fwrite(line.data(), 1, line.size(), f);
    std::fputc('\n', f);
  }
}

void LogMux::Progress(int rank, int stream, const std::string& text) {
  auto it = ranks_.find(rank);
  const int s = stream == 2 ? 1 : 0;
  if (it == ranks_.end() || !Tty(s) || !it->second.on_terminal[s]) return;
  const RankOut& r = it->second;
  std::string draw = CloseProgress(s, rank);
  if (status_mode_) {  // a whole line above the status line
    Emit(s, draw + (s == 0 ? r.prefix : r.err_prefix) + text + "\n");
  } else {
    if (draw.empty() || draw.back() == '\n') draw += "\r\033[K";
    Writer(s).Write(draw + (s == 0 ? r.prefix : r.err_prefix) + text);
  }
  open_[s] = rank;
}

void LogMux::Notice(const std::string& line) {
  Emit(1, CloseProgress(1, -1) + line + "\n");
  if (follower_) follower_->OnNotice(line);
}

void LogMux::SetStatus(const std::string& text) {
  if (!status_mode_ || text == status_) return;
  status_ = text;
  err_->Write("\r\033[K" + status_);
}

void LogMux::Emit(int s, std::string text) {
  if (!status_mode_ || !Tty(s)) {
    Writer(s).Write(std::move(text));
    return;
  }
  err_->Write({{opt_.err, "\r\033[K"}, {s == 0 ? opt_.out : opt_.err, std::move(text)}, {opt_.err, status_}});
}

std::string LogMux::CloseProgress(int s, int rank) {
  if (status_mode_) {  // open lines are whole lines; one is replaced only by its own rank's next
    if (!Tty(s)) return "";
    const bool same = open_[s] && *open_[s] == rank;
    open_[0].reset();
    open_[1].reset();
    return same ? "\033[A\r\033[K" : "";
  }
  const int other = 1 - s;
  if (open_[other] && Tty(s) && Tty(other)) {  // one terminal: end the other stream's line first
    Writer(other).Write("\n");
    open_[other].reset();
  }
  if (!open_[s]) return "";
  const bool same = *open_[s] == rank;
  open_[s].reset();
  return same ? "\r\033[K" : "\n";
}

void LogMux::Marker(const std::string& line) {
  for (auto& [rank, r] : ranks_)
    for (FILE* f : r.file)
      if (f) std::fprintf(f, "%s\n", line.c_str());
}

void LogMux::Flush() {
  if (status_mode_ && !status_.empty()) err_->Write("\r\033[K");
  status_.clear();
  for (int s = 0; s < 2 && !status_mode_; ++s)
    if (open_[s]) Writer(s).Write("\n");
  open_[0].reset();
  open_[1].reset();
  out_->Flush();
  err_->Flush();
  for (auto& [rank, r] : ranks_)
    for (FILE* f : r.file)
      if (f) std::fflush(f);
}

}  // namespace ds
