// StatusServer: how `dslaunch status` finds a running job of this user. A
// Unix socket `<job>-<pid>.sock` in the user's private directory
// (common/private_dir.h: 0700, judged on its descriptor), so no other user
// can reach it; each connection gets the job's view as JSON
// (launcher/report/job_view_json.h) and is closed, nothing is read from it.
// When the job ends, Finish() leaves the final view as the job record
// `<job>-<pid>.json` (0600, written under a temporary name and renamed),
// removes the socket, and prunes the records to the newest kKeepRecords.
// On the coordinator's io_context, never blocking it: a reply is written
// asynchronously within kWriteTimeout (a client that does not read is cut
// off), at most kMaxConnections at once (more wait in the backlog:
// accept_loop.h). The socket is close-on-exec from birth. Not thread-safe: the io thread only.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "common/asio.h"
#include "common/private_dir.h"
#include "common/status.h"
#include "common/unique_fd.h"
#include "launcher/coordinator/accept_loop.h"

namespace ds {

class StatusServer {
 public:
  static constexpr std::chrono::seconds kWriteTimeout{5};
  static constexpr int kMaxConnections = 16;
  static constexpr size_t kKeepRecords = 50;

  // `render` (called on the io thread per connection) returns the JSON.
  StatusServer(asio::io_context& io, std::function<std::string()> render);
  ~StatusServer();

  // Listens at `dir`/`name`.sock. Error names the path and the reason.
  Status Listen(PrivateDir dir, const std::string& name);
  // Writes `record` as `name`.json and removes the socket; closes
  // everything. Error: the record could not be written (named).
  Status Finish(const std::string& record);
  std::string socket_path() const { return dir_.path + "/" + name_ + ".sock"; }

 private:
  struct Conn;
  void Answer(UniqueFd fd);

  asio::io_context& io_;
  std::function<std::string()> render_;
  PrivateDir dir_;
  std::string name_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // connections' handlers check it after Finish
  AcceptLoop loop_;  // last: destroyed first, while what on_accept uses lives
};

// Removes all but the newest `keep` records (*.json) in `dir`.
void PruneRecords(const PrivateDir& dir, size_t keep);

// Writes `text` as `dir`/`name` (0600) through a temporary name and a rename.
Status WritePrivateFile(const PrivateDir& dir, const std::string& name, const std::string& text);

}  // namespace ds
