#include "wire/attach_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "common/files.h"
#include "common/strings.h"
#include "common/unique_fd.h"
#include "wire/wire_format.h"

namespace ds {
namespace {

constexpr const char* kInfix = ".attach.";
constexpr size_t kMaxFile = 64 * 1024;

bool GoodJobId(const std::string& id) {
  return !id.empty() && id.size() <= 64 &&
         id.find_first_not_of("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-") == std::string::npos;
}

Result<std::string> ReadAt(int dirfd, const std::string& name, const std::string& shown) {
  UniqueFd fd(::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) return Status::IOError(fmt::format("{}: {}", shown, std::strerror(errno)));
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd.get(), buf, sizeof(buf))) > 0 && text.size() < kMaxFile) text.append(buf, static_cast<size_t>(n));
  if (n < 0) return Status::IOError(fmt::format("{}: {}", shown, std::strerror(errno)));
  if (text.size() >= kMaxFile) return Status::InvalidArgument(fmt::format("{}: larger than {} bytes", shown, kMaxFile));
  return text;
}

}  // namespace

std::string AttachFileName(const std::string& job_id, uint32_t node) {
  return job_id + kInfix + (node == wire::kAttachLeaderNode ? std::string("leader") : std::to_string(node));
}

std::string FormatAttachFile(const AttachFile& f) {
  std::string out = fmt::format("job {}\nnode {}\nkey {}\n", f.job_id,
                                f.node == wire::kAttachLeaderNode ? std::string("leader") : std::to_string(f.node), f.key);
  for (const std::string& c : f.coordinators) out += "coordinator " + c + "\n";
  return out;
}

Result<AttachFile> ParseAttachFile(const std::string& text, const std::string& shown) {
  AttachFile f;
  bool have_node = false;
  int n = 0;
  for (const std::string& line : Split(text, '\n')) {
    ++n;
    if (line.empty()) continue;
    const size_t sp = line.find(' ');
    const std::string word = line.substr(0, sp), value = sp == std::string::npos ? "" : line.substr(sp + 1);
    auto bad = [&](const char* expected) {
      return Status::InvalidArgument(fmt::format("{}:{}: expected {}, got '{}'", shown, n, expected, Printable(line)));
    };
    if (word == "job") {
      if (!GoodJobId(value)) return bad("'job ID' (1-64 of [0-9A-Za-z_-])");
      f.job_id = value;
    } else if (word == "node") {
      if (value == "leader") {
        f.node = wire::kAttachLeaderNode;
      } else {
        const std::optional<int64_t> v = ParseInt(value);
        if (!v || *v < 0 || *v >= wire::kAttachLeaderNode) return bad("'node N' or 'node leader'");
        f.node = static_cast<uint32_t>(*v);
      }
      have_node = true;
    } else if (word == "key") {
      if (value.size() != 64 || value.find_first_not_of("0123456789abcdef") != std::string::npos)
        return bad("'key' and 64 hex digits");
      f.key = value;
    } else if (word == "coordinator") {
      if (value.empty()) return bad("'coordinator HOST:PORT'");
      f.coordinators.push_back(value);
    } else {
      return bad("job, node, key or coordinator");
    }
  }
  if (f.job_id.empty() || !have_node || f.key.empty() || f.coordinators.empty())
    return Status::InvalidArgument(fmt::format("{}: expected job, node, key and at least one coordinator", shown));
  return f;
}

Status WriteAttachFile(const PrivateDir& dir, const AttachFile& f) {
  if (!GoodJobId(f.job_id))
    return Status::InvalidArgument(fmt::format("job id '{}' cannot name an attach file", Printable(f.job_id)));
  const std::string name = AttachFileName(f.job_id, f.node);
  return WriteFileDurablyAt(dir.fd.get(), name, dir.path + "/" + name, FormatAttachFile(f), 0600);
}

void RemoveAttachFile(const PrivateDir& dir, const std::string& job_id, uint32_t node) {
  if (GoodJobId(job_id)) ::unlinkat(dir.fd.get(), AttachFileName(job_id, node).c_str(), 0);
}

std::vector<AttachFile> FindAttachFiles(const PrivateDir& dir, const std::string& job_id,
                                        std::vector<std::string>* skipped) {
  std::vector<std::string> names;
  const int fd = ::openat(dir.fd.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (DIR* d = fd >= 0 ? ::fdopendir(fd) : nullptr) {
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      const size_t at = name.find(kInfix);
      if (at == std::string::npos || at == 0 || name.find(".tmp") != std::string::npos) continue;
      if (job_id.empty() || name.substr(0, at) == job_id) names.push_back(name);
    }
    ::closedir(d);
  } else if (fd >= 0) {
    ::close(fd);
  }
  std::sort(names.begin(), names.end());
  std::vector<AttachFile> out;
  for (const std::string& name : names) {
    const std::string shown = dir.path + "/" + name;
    Result<std::string> text = ReadAt(dir.fd.get(), name, shown);
    Result<AttachFile> f = text.ok() ? ParseAttachFile(*text, shown) : Result<AttachFile>(text.status());
    if (f.ok() && name != AttachFileName(f->job_id, f->node))
      f = Status::InvalidArgument(fmt::format("{}: names job {} node {} inside", shown, f->job_id, f->node));
    if (f.ok()) out.push_back(std::move(f).value());
    else if (skipped) skipped->push_back(f.status().message());
  }
  return out;
}

}  // namespace ds
