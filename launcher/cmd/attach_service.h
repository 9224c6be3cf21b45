// AttachService: the leading dslaunch's side of `dslaunch attach`
// (attach_cmd.h): the AttachHub that follows the job's terminal (LogMux),
// the coordinator's handler for the attach role (each client gets the
// job's history first: attach_history.h), and the leader's own attach file
// (wire/attach_file.h, key AttachKey(secret)), which names this
// coordinator and the standbys and goes with the service. On the io
// thread, except the constructor and destructor (before and after io.run()).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/private_dir.h"
#include "launcher/coordinator/attach_hub.h"
#include "launcher/coordinator/coordinator.h"
#include "launcher/report/job_record.h"
#include "launcher/report/log_mux.h"

namespace ds {

class AttachService {
 public:
  // `leader` ("" = none): a line for the history, e.g. that this coordinator
  // took the job over (followed there by how the takeover went, once it
  // did). Everything is borrowed and must outlive the service.
  // Without a private directory there is no leader's file (said once on
  // its terminal); the agents' files still find the job.
  AttachService(Coordinator& coord, const JobRecord& record, LogMux& mux, const std::string& secret,
                std::string leader);
  ~AttachService();
  // Where a leader may be found, this one first: the file and the next clients say so.
  void SetCoordinators(std::vector<std::string> addresses);
  // The job ended: every client gets its exit code and summary.
  void End();
  // This coordinator no longer leads (deposed): its file goes now, so that
  // attach looks for the new leader (the destructor does it otherwise).
  void RemoveFile();
  AttachHub& hub() { return hub_; }

 private:
  void WriteFile();

  Coordinator& coord_;
  const JobRecord& record_;
  LogMux& mux_;
  std::string key_;
  std::string leader_;
  std::vector<std::string> coordinators_;
  std::optional<PrivateDir> dir_;
  AttachHub hub_;
};

}  // namespace ds
