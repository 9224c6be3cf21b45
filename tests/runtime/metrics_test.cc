// Metrics: CRC-32C against its check value, TFRecord framing and the
// hand-encoded Event protobuf, JSON lines.
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "runtime/metrics.h"
#include "runtime/progress.h"

using namespace ds::rt;
namespace fs = std::filesystem;

TEST_CASE("crc32c check value", "[metrics]") {
  CHECK(Crc32c("123456789", 9) == 0xE3069283u);
  CHECK(Crc32c("", 0) == 0u);
}

TEST_CASE("scalar event encoding", "[metrics]") {
  const std::string ev = EncodeScalarEvent(1.5, 300, {{"loss", 0.25}});
  std::string want;
  want += '\x09';  // wall_time, fixed64
  double wt = 1.5;
  want.append(reinterpret_cast<const char*>(&wt), 8);
  want += "\x10\xac\x02";  // step 300 varint
  // summary (field 5) { value (field 1) { tag "loss", simple_value 0.25f } }
  float v = 0.25f;
  std::string value = std::string("\x0a\x04loss\x15", 7) + std::string(reinterpret_cast<const char*>(&v), 4);
  std::string summary = "\x0a" + std::string(1, char(value.size())) + value;
  want += "\x2a" + std::string(1, char(summary.size())) + summary;
  CHECK(ev == want);
}

TEST_CASE("metrics files", "[metrics]") {
  char t[] = "/tmp/dstrain-metrics-XXXXXX";
  std::string dir = mkdtemp(t);
  {
    auto w = MetricsWriter::Open(dir + "/run");
    REQUIRE(w.ok());
    (*w)->Log(1, {{"train/loss", 2.0}, {"train/lr", 1e-3}});
    (*w)->Log(2, {{"train/loss", 1.5}});
    (*w)->Flush();
    // TFRecord: the first record is the file_version event.
    std::ifstream in((*w)->event_path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string data = ss.str();
    size_t at = 0, records = 0;
    while (at + 12 <= data.size()) {
      uint64_t len;
      uint32_t len_crc, data_crc;
      std::memcpy(&len, data.data() + at, 8);
      std::memcpy(&len_crc, data.data() + at + 8, 4);
      CHECK(len_crc == MaskedCrc32c(&len, 8));
      REQUIRE(at + 12 + len + 4 <= data.size());
      std::memcpy(&data_crc, data.data() + at + 12 + len, 4);
      CHECK(data_crc == MaskedCrc32c(data.data() + at + 12, len));
      if (records == 0) CHECK(data.substr(at + 12, len).find("brain.Event:2") != std::string::npos);
      at += 12 + len + 4;
      ++records;
    }
    CHECK(at == data.size());
    CHECK(records == 3);
  }
  std::ifstream j(dir + "/run/metrics.jsonl");
  std::string line;
  std::getline(j, line);
  CHECK(line.rfind("{\"step\": 1, \"time\": ", 0) == 0);
  CHECK(line.find("\"train/loss\": 2, \"train/lr\": 0.001}") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("progress durations", "[metrics]") {
  CHECK(Progress::FormatDuration(42) == "42s");
  CHECK(Progress::FormatDuration(185) == "3m05s");
  CHECK(Progress::FormatDuration(3720) == "1h02m");
}
