#include "runtime/metrics.h"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "common/log.h"

namespace ds::rt {
namespace {

// Protobuf wire format helpers (varint, tags, fixed-width little-endian).
void Varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void Tag(std::string& out, int field, int wire) { Varint(out, (uint64_t(field) << 3) | wire); }
template <typename T>
void Fixed(std::string& out, T v) { out.append(reinterpret_cast<const char*>(&v), sizeof(v)); }
void Bytes(std::string& out, int field, const std::string& b) {
  Tag(out, field, 2);
  Varint(out, b.size());
  out += b;
}

std::string EncodeEvent(double wall_time, int64_t step, const std::string* file_version,
                        const std::string* summary) {
  std::string ev;
  Tag(ev, 1, 1);  // wall_time: double
  Fixed(ev, wall_time);
  Tag(ev, 2, 0);  // step: int64
  Varint(ev, static_cast<uint64_t>(step));
  if (file_version) Bytes(ev, 3, *file_version);
  if (summary) Bytes(ev, 5, *summary);
  return ev;
}

double Now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string JsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  return fmt::format("{}", v);
}

}  // namespace

uint32_t Crc32c(const void* data, size_t n) {
  static const auto table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t crc = 0xffffffffu;
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return crc ^ 0xffffffffu;
}

uint32_t MaskedCrc32c(const void* data, size_t n) {
  const uint32_t crc = Crc32c(data, n);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string EncodeScalarEvent(double wall_time, int64_t step,
                              const std::vector<std::pair<std::string, double>>& scalars) {
  std::string summary;
  for (const auto& [tag, value] : scalars) {
    std::string v;
    Bytes(v, 1, tag);  // Summary.Value.tag
    Tag(v, 2, 5);      // Summary.Value.simple_value: float
    Fixed(v, static_cast<float>(value));
    Bytes(summary, 1, v);  // Summary.value
  }
  return EncodeEvent(wall_time, step, nullptr, &summary);
}

Result<std::unique_ptr<MetricsWriter>> MetricsWriter::Open(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IOError(fmt::format("metrics dir {}: {}", dir, ec.message()));
  std::unique_ptr<MetricsWriter> w(new MetricsWriter());
  const std::string jsonl = dir + "/metrics.jsonl";
  w->jsonl_ = std::fopen(jsonl.c_str(), "ae");  // e: O_CLOEXEC
  if (!w->jsonl_) return Status::IOError(fmt::format("{}: {}", jsonl, strerror(errno)));
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  w->event_path_ = fmt::format("{}/events.out.tfevents.{}.{}.{}", dir,
                               static_cast<int64_t>(Now()), host, getpid());
  w->events_ = std::fopen(w->event_path_.c_str(), "wbe");
  if (!w->events_) return Status::IOError(fmt::format("{}: {}", w->event_path_, strerror(errno)));
  const std::string version = "brain.Event:2";
  w->WriteRecord(EncodeEvent(Now(), 0, &version, nullptr));
  return w;
}

MetricsWriter::~MetricsWriter() {
  if (jsonl_) std::fclose(jsonl_);
  if (events_) std::fclose(events_);
}

void MetricsWriter::WriteRecord(const std::string& payload) {
  if (!events_) return;
  const uint64_t len = payload.size();
  const uint32_t len_crc = MaskedCrc32c(&len, sizeof(len));
  const uint32_t data_crc = MaskedCrc32c(payload.data(), payload.size());
  bool ok = std::fwrite(&len, sizeof(len), 1, events_) == 1 &&
            std::fwrite(&len_crc, sizeof(len_crc), 1, events_) == 1 &&
            std::fwrite(payload.data(), 1, payload.size(), events_) == payload.size() &&
            std::fwrite(&data_crc, sizeof(data_crc), 1, events_) == 1;
  if (!ok) {
    DS_LOG(Warn, Train) << event_path_ << ": write failed; no more TensorBoard events";
    std::fclose(events_);
    events_ = nullptr;
  }
}

void MetricsWriter::Log(int64_t step, const std::vector<std::pair<std::string, double>>& scalars) {
  if (jsonl_) {
    std::string line = fmt::format("{{\"step\": {}, \"time\": {:.3f}", step, Now());
    for (const auto& [tag, value] : scalars) line += fmt::format(", \"{}\": {}", tag, JsonNumber(value));
    line += "}\n";
    std::fputs(line.c_str(), jsonl_);
  }
  WriteRecord(EncodeScalarEvent(Now(), step, scalars));
}

void MetricsWriter::Flush() {
  if (jsonl_) std::fflush(jsonl_);
  if (events_) std::fflush(events_);
}

}  // namespace ds::rt
