#include "launcher/cmd/pid_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ds {

Result<PidFile> PidFile::Create(const std::string& path, long pid) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    if (err == EEXIST)
      return Status::IOError("--save_pid: " + path + " exists already; not overwriting it");
    return Status::IOError("--save_pid: " + path + ": " + std::strerror(err));
  }
  const std::string text = std::to_string(pid);
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int err = errno;
  ::close(fd);
  if (!ok) {
    ::unlink(path.c_str());
    return Status::IOError("--save_pid: " + path + ": " + std::strerror(err));
  }
  PidFile f;
  f.path_ = path;
  return f;
}

std::string PidFile::DefaultPath() { return "/tmp/" + std::to_string(::getpid()) + ".deepspeed"; }

PidFile& PidFile::operator=(PidFile&& other) noexcept {
  if (this != &other) {
    if (!path_.empty()) ::unlink(path_.c_str());
    path_ = std::move(other.path_);
    other.path_.clear();
  }
  return *this;
}

PidFile::~PidFile() {
  if (!path_.empty()) ::unlink(path_.c_str());
}

}  // namespace ds
