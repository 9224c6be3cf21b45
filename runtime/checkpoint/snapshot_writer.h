// SnapshotWriter: a rank's snapshot saves with the rank standing still only
// for a copy of its shard. For the save of step S the
// caller copies the step's shard into spare() (the parameters as they are
// after step S: consistent) and calls Begin; a helper thread then, off the
// training thread's path:
//   - computes the shard's crc32 over the header and the float arrays in
//     place (no encoded copy) and writes it with one writev as the
//     handoff's .shard file in the agent's incoming/ (wire/snapshot_handoff.h),
//     into the file of a pruned shard the agent left for this rank
//     (incoming/spare.<rank>: memory already allocated) when there is one;
//   - shares every rank's [failed, bytes, crc32] in one small allreduce on
//     a communicator of its own (the training thread's collectives never
//     wait for it, nor it for them), so every rank can build the manifest;
//   - writes the manifest, whose arrival hands the save to the agent.
// Complete (at the next save, and at the end) waits for that. The files and
// their bytes are exactly SaveSnapshot's (checkpoint_snapshot.h), so run
// identity, the manifest digest (the set) and everything the agent checks
// stay as they were. One save at a time: spare() and Begin only while none
// is pending (checked). Used by one thread (the trainer's); the helper
// thread is internal and lets no exception escape (a CommError becomes the
// save's Unavailable, which the trainer throws on as a CommError).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/dir.h"
#include "common/status.h"
#include "runtime/checkpoint/checkpoint.h"
#include "runtime/comm/communicator.h"

namespace ds::rt {

class SnapshotWriter {
 public:
  // `snapshot_dir`: DSLAUNCH_SNAPSHOT_DIR (its incoming/ is opened at the
  // first Begin). `comm` (every rank of the job, in rank order) is the
  // helper's alone: no other thread may use it while the writer lives.
  SnapshotWriter(std::string snapshot_dir, Communicator& comm);
  ~SnapshotWriter();  // waits for the helper; a save not completed is left unhanded (no manifest)
  SnapshotWriter(const SnapshotWriter&) = delete;
  SnapshotWriter& operator=(const SnapshotWriter&) = delete;

  // The buffer the next save's shard is copied into (reused: no page faults
  // after the first save); the helper reads it until Complete.
  ShardState* spare();
  // Starts the save of spare() as `meta` (meta.run_id a run id, 1 to 32 hex
  // digits; InvalidArgument naming it otherwise). IOError naming the
  // directory when the agent's incoming/ cannot be opened.
  Status Begin(const CheckpointMeta& meta);
  // Whether a Begin awaits its Complete.
  bool pending() const { return pending_; }
  // Waits until the outstanding save is handed over (OK when none). An
  // error on any rank is returned on every rank: its own reason (IOError
  // naming the file) where it failed, "snapshot of step S: rank r could not
  // write its shard" elsewhere; Unavailable when the helper's communicator
  // failed ("snapshot of step S: <CommError>").
  Status Complete();

 private:
  struct Written {  // what the helper reports for one save
    Status status;
    uint64_t bytes = 0;
    uint32_t crc32 = 0;
  };
  void HelperLoop();
  Status Save(const CheckpointMeta& meta);             // helper thread: the whole save
  Written Write(int rank, const CheckpointMeta& meta);  // helper thread: crc32, then the .shard file
  // incoming/spare.<rank> renamed to `name` and open for writing `bytes`; an invalid fd when there is none.
  UniqueFd OpenSpare(int rank, const std::string& name, uint64_t bytes);

  const std::string snapshot_dir_;
  Communicator& comm_;                 // the helper's
  std::optional<Dir> incoming_;        // opened at the first Begin
  ShardState shard_;                   // the copy the helper writes from
  bool pending_ = false;

  std::mutex mu_;                      // guards the hand-over to the helper
  std::condition_variable cv_;
  bool job_ = false;                   // a save for the helper
  bool stopping_ = false;
  CheckpointMeta job_meta_;
  std::optional<Status> done_;         // the helper's result for the job
  std::thread helper_;
};

}  // namespace ds::rt
