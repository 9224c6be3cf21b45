// TempDir: a fresh directory under $TMPDIR (else /tmp) for one test, removed
// with everything in it when the object goes. The one temporary-directory
// helper of the tests. Not thread-safe; one owner.
#pragma once

#include <string>

namespace ds::testing {

class TempDir {
 public:
  // Creates "<tmp>/<prefix>-XXXXXX" (mkdtemp). If that fails, path() is the
  // temporary directory itself and nothing is removed.
  explicit TempDir(const std::string& prefix = "dslaunch-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
  bool owned_ = false;
};

}  // namespace ds::testing
