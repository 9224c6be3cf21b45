// MetricsWriter: per-step scalars (loss, learning rate, throughput...) to
//   <dir>/metrics.jsonl           one JSON object per line: {"step": N, "tag": v, ...}
//   <dir>/events.out.tfevents.*   TensorBoard event file, so `tensorboard
//                                 --logdir <dir>` shows the curves.
// The event file is TFRecord framing (u64 length, masked crc32c of the
// length, payload, masked crc32c of the payload) around Event protobufs that
// are encoded by hand (wall_time, step, file_version, summary{value{tag,
// simple_value}}): no protobuf library needed. Written by rank 0 only.
// Not thread-safe. I/O errors are reported once and further writes dropped.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace ds::rt {

class MetricsWriter {
 public:
  // Creates dir and both files; an error names the path.
  static Result<std::unique_ptr<MetricsWriter>> Open(const std::string& dir);
  ~MetricsWriter();

  // Records scalars for `step` (one JSON line, one Event per call).
  void Log(int64_t step, const std::vector<std::pair<std::string, double>>& scalars);
  void Flush();

  const std::string& event_path() const { return event_path_; }

 private:
  MetricsWriter() = default;
  void WriteRecord(const std::string& payload);

  std::FILE* jsonl_ = nullptr;
  std::FILE* events_ = nullptr;
  std::string event_path_;
};

// CRC-32C (Castagnoli), and TFRecord's mask of it. Exposed for tests.
uint32_t Crc32c(const void* data, size_t n);
uint32_t MaskedCrc32c(const void* data, size_t n);

// The Event protobuf bytes for scalars at step/wall_time (exposed for tests).
std::string EncodeScalarEvent(double wall_time, int64_t step,
                              const std::vector<std::pair<std::string, double>>& scalars);

}  // namespace ds::rt
