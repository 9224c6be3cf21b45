// libFuzzer target: PyTorch's error file as the agent reads it
// (common/torch_error_file.h): parse, bound for the wire, take the frames.
// Input: the file's bytes. Must never throw, crash, recurse without bound or
// exceed the wire bounds (ASan).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/torch_error_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto e = ds::ParseTorchErrorFile(text);
  ds::LastFrames(text, 3);  // any text, not only a parsed traceback
  if (!e) return 0;
  if (e->message.empty()) __builtin_trap();
  ds::TorchError b = ds::BoundForWire(*e);
  if (b.message.size() > ds::kMaxErrorMessage || b.traceback.size() > ds::kMaxErrorTrace) __builtin_trap();
  ds::LastFrames(b.traceback, 3);
  return 0;
}
