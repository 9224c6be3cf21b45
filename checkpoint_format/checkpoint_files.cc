#include "checkpoint_format/checkpoint_files.h"

#include <fmt/format.h>

namespace ds::ckpt {
namespace {
constexpr const char* kCheckpointDir = "checkpoint directory";
constexpr const char* kStepDir = "checkpoint step directory";
}  // namespace

std::string StepDirName(int64_t step) { return fmt::format("step_{:08d}", step); }

Result<Dir> MakeCheckpointDir(const std::string& dir) { return Dir::Make(dir, kCheckpointDir, kCheckpointDirMode); }

Result<Dir> OpenCheckpointDir(const std::string& dir) { return Dir::Open(dir, kCheckpointDir); }

Result<Dir> MakeStepDir(const Dir& ckpt, const std::string& name) {
  return ckpt.MakeDir(name, kStepDir, kCheckpointDirMode);
}

Result<Dir> OpenStepDir(const Dir& ckpt, const std::string& name) { return ckpt.OpenDir(name, kStepDir); }

}  // namespace ds::ckpt
