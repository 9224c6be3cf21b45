#include "runtime/checkpoint/snapshot_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "checkpoint_format/checkpoint_files.h"
#include "common/check.h"
#include "runtime/checkpoint/snapshot.h"
#include "wire/snapshot_handoff.h"

namespace ds::rt {
namespace {

// The shard file's pieces in order (checkpoint.h EncodeShardHeaderInto).
std::vector<iovec> Pieces(const std::string& header, const ShardState& shard) {
  std::vector<iovec> v;
  auto add = [&v](const void* p, size_t n) {
    if (n) v.push_back(iovec{const_cast<void*>(p), n});
  };
  add(header.data(), header.size());
  add(shard.master.data(), shard.master.size() * sizeof(float));
  for (const auto& slot : shard.state) add(slot.data(), slot.size() * sizeof(float));
  return v;
}

uint32_t Crc32Of(const std::vector<iovec>& pieces) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (const iovec& p : pieces) {
    const auto* b = static_cast<const Bytef*>(p.iov_base);
    for (size_t done = 0; done < p.iov_len;) {  // zlib takes uInt lengths
      const size_t n = std::min<size_t>(p.iov_len - done, 1u << 30);
      crc = crc32(crc, b + done, static_cast<uInt>(n));
      done += n;
    }
  }
  return static_cast<uint32_t>(crc);
}

// Writes every piece to `fd` (partial writes and EINTR resumed); errno's reason when it cannot.
Status WriteAll(int fd, std::vector<iovec> pieces, const std::string& path) {
  size_t first = 0;
  while (first < pieces.size()) {
    const int n = static_cast<int>(std::min<size_t>(pieces.size() - first, IOV_MAX));
    const ssize_t w = ::writev(fd, pieces.data() + first, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return Status::IOError(fmt::format("{}: {}", path, std::strerror(errno)));
    for (size_t left = static_cast<size_t>(w); left > 0 && first < pieces.size();) {
      iovec& p = pieces[first];
      const size_t take = std::min(left, p.iov_len);
      p.iov_base = static_cast<char*>(p.iov_base) + take;
      p.iov_len -= take;
      left -= take;
      if (p.iov_len == 0) ++first;
    }
  }
  return Status::OK();
}

Handoff HandoffOf(const CheckpointMeta& meta, int rank, uint32_t crc32) {
  return Handoff{meta.step, static_cast<uint32_t>(rank), crc32,
                 msg::SnapshotId{meta.run_id, static_cast<uint32_t>(meta.world_size),
                                 static_cast<uint8_t>(meta.zero_stage), meta.config_hash, ""}};
}

}  // namespace

SnapshotWriter::SnapshotWriter(std::string snapshot_dir, Communicator& comm)
    : snapshot_dir_(std::move(snapshot_dir)), comm_(comm), helper_([this] { HelperLoop(); }) {}

SnapshotWriter::~SnapshotWriter() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !job_; });
    stopping_ = true;
  }
  cv_.notify_all();
  helper_.join();
}

ShardState* SnapshotWriter::spare() {
  DS_CHECK(!pending_);
  return &shard_;
}

Status SnapshotWriter::Begin(const CheckpointMeta& meta) {
  DS_CHECK(!pending_);
  CheckpointMeta m = meta;
  m.world_size = comm_.size();
  if (const std::string problem = SnapshotIdProblem(HandoffOf(m, comm_.rank(), 0).id, /*set_required=*/false);
      !problem.empty())
    return Status::InvalidArgument("snapshot: " + problem);
  if (!incoming_) {  // the agent's private directory, opened and checked like a checkpoint directory
    Result<Dir> in = Dir::Open(snapshot_dir_, "snapshot directory");
    if (in.ok()) in = in->OpenDir("incoming", "snapshot directory");
    if (!in.ok()) return in.status().Prefixed("snapshot");
    incoming_.emplace(std::move(in).value());
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = true;
    job_meta_ = m;
    done_.reset();
  }
  pending_ = true;
  cv_.notify_all();
  return Status::OK();
}

Status SnapshotWriter::Complete() {
  if (!pending_) return Status::OK();
  pending_ = false;
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_.has_value(); });
  return *std::exchange(done_, std::nullopt);
}

void SnapshotWriter::HelperLoop() {
  // At the training threads' priority: at nice 10 it starved on a machine
  // busy with other nice 10 work and the next save waited for it (mean stall
  // 12-18 ms instead of about 1 ms with snapshots every 10 steps).
  for (;;) {
    CheckpointMeta meta;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || (job_ && !done_); });
      if (stopping_) return;
      meta = job_meta_;
    }
    Status st;
    try {  // the thread's edge: nothing escapes it
      st = Save(meta);
    } catch (const CommError& e) {  // the snapshot communicator is unusable: a peer died, or it was aborted
      st = Status::Unavailable(fmt::format("snapshot of step {}: {}", meta.step, e.what()));
    } catch (const std::exception& e) {
      st = Status::IOError(fmt::format("snapshot of step {}: {}", meta.step, e.what()));
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = std::move(st);
      job_ = false;
    }
    cv_.notify_all();
  }
}

Status SnapshotWriter::Save(const CheckpointMeta& meta) {
  const Written w = Write(comm_.rank(), meta);
  const int rank = comm_.rank(), world = comm_.size();
  std::vector<double> info(3 * world, 0.0);  // every rank's [failed, bytes, crc32], as ShareShardInfo
  info[3 * rank] = w.status.ok() ? 0 : 1;
  info[3 * rank + 1] = static_cast<double>(w.bytes);
  info[3 * rank + 2] = static_cast<double>(w.crc32);
  comm_.AllReduceSum(info.data(), info.size());
  DS_RETURN_IF_ERROR(w.status);
  for (int r = 0; r < world; ++r)
    if (info[3 * r] != 0)
      return Status::IOError(fmt::format("snapshot of step {}: rank {} could not write its shard", meta.step, r));
  return incoming_
      ->WriteFile(HandoffName(HandoffOf(meta, rank, w.crc32), kHandoffManifest), ManifestJson(meta, info),
                  ckpt::kCheckpointFileMode)
      .Prefixed("snapshot");
}

SnapshotWriter::Written SnapshotWriter::Write(int rank, const CheckpointMeta& meta) {
  std::string header;
  EncodeShardHeaderInto(rank, shard_, &header);
  const std::vector<iovec> pieces = Pieces(header, shard_);
  Written w;
  for (const iovec& p : pieces) w.bytes += p.iov_len;
  w.crc32 = Crc32Of(pieces);
  const std::string name = HandoffName(HandoffOf(meta, rank, w.crc32), kHandoffShard);
  const std::string path = incoming_->PathOf(name);
  UniqueFd fd = OpenSpare(rank, name, w.bytes);
  if (fd.get() < 0) {
    // A file of that name is a leftover of this same save (same step, rank
    // and bytes) that was never handed over: replaced.
    (void)incoming_->Unlink(name);
    fd.Reset(::openat(incoming_->fd(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                      ckpt::kCheckpointFileMode));
  }
  if (fd.get() < 0) {
    w.status = Status::IOError(fmt::format("snapshot: {}: {}", path, std::strerror(errno)));
    return w;
  }
  w.status = WriteAll(fd.get(), pieces, path).Prefixed("snapshot");
  return w;
}

UniqueFd SnapshotWriter::OpenSpare(int rank, const std::string& name, uint64_t bytes) {
  // The agent's incoming/spare.<rank> (agent/snapshots/store.h): a pruned
  // shard's file whose memory is ours to overwrite, renamed to the handoff
  // first so the agent can neither hand it out again nor replace it meanwhile.
  const std::string spare = fmt::format("spare.{}", rank);
  if (::renameat(incoming_->fd(), spare.c_str(), incoming_->fd(), name.c_str()) != 0) return UniqueFd();
  UniqueFd fd(::openat(incoming_->fd(), name.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      (static_cast<uint64_t>(st.st_size) != bytes && ::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0)) {
    (void)incoming_->Unlink(name);  // not one to write into: a fresh file takes its place
    return UniqueFd();
  }
  return fd;
}

}  // namespace ds::rt
