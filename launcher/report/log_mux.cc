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
  if (opt_.color == "always") color_ = true;
  else if (opt_.color == "never") color_ = false;
  else color_ = opt_.out_is_tty;
  terminal_ = std::make_unique<TerminalWriter>(
      opt_.out, opt_.terminal_queue_bytes,
      opt_.log_dir.empty() ? "--log-dir keeps every line" : "every line is in " + opt_.log_dir + "/rank<N>.log");
}

LogMux::~LogMux() {
  terminal_.reset();  // writes what is queued
  for (auto& [rank, r] : ranks_)
    if (r.file) std::fclose(r.file);
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
  const auto& only = opt_.terminal_local_ranks;
  r.on_terminal = only.empty() || local_rank < 0 || std::find(only.begin(), only.end(), local_rank) != only.end();
  std::string plain = fmt::format("{}:{}", host, rank);
  r.prefix = color_ ? fmt::format("\033[{}m{}\033[0m ", kColors[rank % std::size(kColors)], plain) : plain + " ";
  if (!opt_.log_dir.empty() && r.file == nullptr) {
    std::string path = fmt::format("{}/rank{}.log", opt_.log_dir, rank);
    r.file = std::fopen(path.c_str(), "ae");  // e: O_CLOEXEC, no worker inherits a rank's log
    if (r.file == nullptr)
      std::fprintf(stderr, "dslaunch: warning: cannot open %s: %s\n", path.c_str(), std::strerror(errno));
  }
}

void LogMux::Line(int rank, int stream, const std::string& line) {
  (void)stream;
  auto it = ranks_.find(rank);
  if (it == ranks_.end()) {
    AddRank(rank, "?");
    it = ranks_.find(rank);
  }
  // Live, also through a pipe: the writer flushes after each batch.
  if (it->second.on_terminal) terminal_->Write(it->second.prefix + line + "\n");
  if (it->second.file) {
    std::fwrite(line.data(), 1, line.size(), it->second.file);
    std::fputc('\n', it->second.file);
  }
}

void LogMux::Marker(const std::string& line) {
  for (auto& [rank, r] : ranks_)
    if (r.file) std::fprintf(r.file, "%s\n", line.c_str());
}

void LogMux::Flush() {
  terminal_->Flush();
  for (auto& [rank, r] : ranks_)
    if (r.file) std::fflush(r.file);
}

}  // namespace ds
