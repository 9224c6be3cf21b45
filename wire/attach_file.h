// Attach files: how `dslaunch attach [JOB]` finds a running job on this
// host. Each agent of a job keeps <job>.attach.<node>, and the leading
// coordinator keeps <job>.attach.leader, in this user's private directory
// (common/private_dir.h: 0700, judged on its descriptor, so no other user
// reads or plants one); each is 0600, written whole through a temporary
// name and a rename, and removed when its writer ends. A file holds the
// job, the node whose attach key it carries (wire_format.md "Attach"), the
// key, and where a leader may be found, in the order to try them. Plain
// functions, thread-safe; `dir` is the caller's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/private_dir.h"
#include "common/status.h"

namespace ds {

struct AttachFile {
  std::string job_id;
  uint32_t node = 0;                      // wire::kAttachLeaderNode: the leader's own
  std::string key;                        // AttachKey(token or secret), hex
  std::vector<std::string> coordinators;  // host:port, the writer's current leader first
};

// "<job>.attach.<node>" or "<job>.attach.leader".
std::string AttachFileName(const std::string& job_id, uint32_t node);

// The file's text, and back. Parse's InvalidArgument names `shown`, the line and what was expected.
std::string FormatAttachFile(const AttachFile& f);
Result<AttachFile> ParseAttachFile(const std::string& text, const std::string& shown);

// Writes `f` into `dir`. InvalidArgument for a job id that cannot name a
// file (1-64 of [0-9A-Za-z_-]); else the write's error, naming the path.
Status WriteAttachFile(const PrivateDir& dir, const AttachFile& f);
void RemoveAttachFile(const PrivateDir& dir, const std::string& job_id, uint32_t node);

// Every attach file in `dir` (of `job_id`; "" = of every job), by name; a
// file that does not parse is left out and its error added to `skipped`.
std::vector<AttachFile> FindAttachFiles(const PrivateDir& dir, const std::string& job_id,
                                        std::vector<std::string>* skipped);

}  // namespace ds
