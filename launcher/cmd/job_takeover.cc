#include "launcher/cmd/job_takeover.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "common/private_dir.h"
#include "common/strings.h"
#include "common/unique_fd.h"
#include "launcher/coordinator/status_server.h"
#include "wire/hmac_auth.h"

namespace ds {
namespace {

std::string FileName(const std::string& job_id) { return job_id + ".takeover"; }

}  // namespace

Status CheckJobId(const std::string& job_id) {
  const bool ok = !job_id.empty() && job_id.size() <= 64 &&
                  job_id.find_first_not_of("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-") ==
                      std::string::npos;
  if (ok) return Status::OK();
  return Status::InvalidArgument(fmt::format("--resume '{}': expected a job id (the 12 characters `dslaunch status "
                                             "--all` shows)", Printable(job_id)));
}

Status WriteTakeoverRecord(const std::string& job_id, const TakeoverRecord& r) {
  DS_ASSIGN_OR_RETURN(PrivateDir dir, OpenPrivateDir());
  return WritePrivateFile(dir, FileName(job_id), r.secret + "\n" + r.address + "\n");
}

Result<TakeoverRecord> ReadTakeoverRecord(const std::string& job_id) {
  DS_RETURN_IF_ERROR(CheckJobId(job_id));
  DS_ASSIGN_OR_RETURN(PrivateDir dir, OpenPrivateDir());
  const std::string path = fmt::format("{}/{}", dir.path, FileName(job_id));
  UniqueFd fd(::openat(dir.fd.get(), FileName(job_id).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.get() < 0)
    return Status::NotFound(fmt::format("--resume {}: {}: {}; only the host and user that ran the job can take it "
                                        "over, and only while it runs", job_id, path, std::strerror(errno)));
  char buf[512];
  const ssize_t n = ::read(fd.get(), buf, sizeof(buf));
  const std::vector<std::string> lines = Split(n > 0 ? std::string(buf, static_cast<size_t>(n)) : "", '\n');
  if (lines.size() < 2 || lines[0].empty() || lines[1].empty())
    return Status::InvalidArgument(fmt::format("--resume {}: {}: expected the secret and the address on two lines",
                                               job_id, path));
  return TakeoverRecord{lines[0], lines[1]};
}

void RemoveTakeoverRecord(const std::string& job_id) {
  Result<PrivateDir> dir = OpenPrivateDir();
  if (dir.ok()) ::unlinkat(dir->fd.get(), FileName(job_id).c_str(), 0);
}

Status ListenWhereTheLostOneDid(Coordinator& coord) {
  Status st;
  for (int i = 0; i < 40; ++i) {
    if ((st = coord.Listen()).ok()) return st;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Status::Unavailable(fmt::format("--resume: {} (the address the job's agents dial)", st.message()));
}

std::string FailoverAgentToken(const std::string& secret, const std::string& job_id, int node) {
  const std::string what = fmt::format("dslaunch failover agent {} {}", job_id, node);
  return HexEncode(HmacSha256(secret, Bytes(what.begin(), what.end())));
}

}  // namespace ds
