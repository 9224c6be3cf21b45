// libFuzzer target: the job-file parser (YAML through yaml-cpp, then
// validation). Must never crash, hang or leak (ASan); every rejection is a
// Status, never an escaped exception.
#include <cstddef>
#include <cstdint>
#include <string>

#include "launcher/config/job_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;  // yaml-cpp recursion on deep nesting is not what we test here
  std::string text(reinterpret_cast<const char*>(data), size);
  auto job = ds::ParseJobFile(text, "fuzz.yaml");
  (void)job;
  return 0;
}
