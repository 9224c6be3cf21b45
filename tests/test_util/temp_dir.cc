#include "tests/test_util/temp_dir.h"

#include <stdlib.h>

#include <filesystem>

namespace ds::testing {

TempDir::TempDir(const std::string& prefix) {
  const char* base = ::getenv("TMPDIR");
  const std::string root = base && *base ? base : "/tmp";
  std::string tmpl = root + "/" + prefix + "-XXXXXX";
  char* p = ::mkdtemp(tmpl.data());
  owned_ = p != nullptr;
  path_ = owned_ ? std::string(p) : root;
}

TempDir::~TempDir() {
  std::error_code ec;
  if (owned_) std::filesystem::remove_all(path_, ec);
}

}  // namespace ds::testing
