// PidFile: DeepSpeed's --save_pid. While the job runs, /tmp/<pid>.deepspeed
// holds dslaunch's pid (decimal, no newline, as DeepSpeed writes it), so a
// program that started dslaunch can find the launcher to signal. The file is
// created exclusively (O_EXCL | O_NOFOLLOW: never an existing file, never
// through a symlink someone planted in /tmp) and removed by the destructor,
// so every path out of RunJob that returns (success, failure, Ctrl-C)
// removes it. Not thread-safe; one owner.
#pragma once

#include <string>

#include "common/status.h"

namespace ds {

class PidFile {
 public:
  // Creates `path` holding `pid`. IOError naming the file when it exists
  // already ("...: it exists; not overwriting it") or cannot be written.
  static Result<PidFile> Create(const std::string& path, long pid);
  // DeepSpeed's path for this process: /tmp/<getpid()>.deepspeed.
  static std::string DefaultPath();

  PidFile() = default;
  PidFile(PidFile&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  PidFile& operator=(PidFile&& other) noexcept;
  PidFile(const PidFile&) = delete;
  PidFile& operator=(const PidFile&) = delete;
  // Removes the file, if this object created it.
  ~PidFile();

  const std::string& path() const { return path_; }

 private:
  std::string path_;  // "" = nothing to remove
};

}  // namespace ds
