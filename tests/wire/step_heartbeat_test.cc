// The step beat datagram (wire/step_heartbeat.h, wire_format.md "Step
// heartbeats"): the short 48-byte form PyTorch scripts send per
// docs/usage.md still decodes (compute and samples unknown), the long form
// carries both, every other length is refused.
#include <catch2/catch.hpp>

#include <cstring>
#include <limits>

#include "wire/step_heartbeat.h"

namespace ds {
namespace {

const std::string kToken(kStepBeatTokenChars, 'a');

std::optional<StepBeat> Decode(const std::string& b) {
  return DecodeStepBeat(reinterpret_cast<const uint8_t*>(b.data()), b.size());
}

// What docs/usage.md's PyTorch recipe sends: struct.pack(">qq", rank, step) + token.
std::string ShortForm(int64_t rank, int64_t step) {
  std::string b(16, '\0');
  for (int i = 0; i < 8; ++i) {
    b[7 - i] = static_cast<char>((rank >> (8 * i)) & 0xff);
    b[15 - i] = static_cast<char>((step >> (8 * i)) & 0xff);
  }
  return b + kToken;
}

TEST_CASE("step beat: the short form decodes with compute and samples unknown", "[step_heartbeat]") {
  auto beat = Decode(ShortForm(3, 1201));
  REQUIRE(beat);
  CHECK(beat->rank == 3);
  CHECK(beat->step == 1201);
  CHECK(beat->token == kToken);
  CHECK(beat->compute_micros == -1);
  CHECK(beat->samples == -1);
}

TEST_CASE("step beat: the long form round-trips compute and samples", "[step_heartbeat]") {
  const std::string b = EncodeStepBeat({5, 77, kToken, 123456, 64});
  CHECK(b.size() == kStepBeatLongSize);
  CHECK(b.compare(0, kStepBeatSize, ShortForm(5, 77)) == 0);  // the short form is its prefix
  auto beat = Decode(b);
  REQUIRE(beat);
  CHECK(beat->step == 77);
  CHECK(beat->compute_micros == 123456);
  CHECK(beat->samples == 64);
  auto unknown = Decode(EncodeStepBeat({5, 78, kToken, -1, -9}));
  REQUIRE(unknown);
  CHECK(unknown->compute_micros == -1);
  CHECK(unknown->samples == -1);  // any negative means unknown
  CHECK(unknown->save_stall_micros == -1);
}

TEST_CASE("step beat: the save form carries the last save's stall after the long form", "[step_heartbeat]") {
  const std::string b = EncodeStepBeat({5, 80, kToken, 123456, 64, 230});
  CHECK(b.size() == kStepBeatSaveSize);
  CHECK(b.compare(0, kStepBeatLongSize, EncodeStepBeat({5, 80, kToken, 123456, 64})) == 0);
  auto beat = Decode(b);
  REQUIRE(beat);
  CHECK(beat->compute_micros == 123456);
  CHECK(beat->save_stall_micros == 230);
  CHECK(Decode(EncodeStepBeat({5, 81, kToken, 1, 1, 0}))->save_stall_micros == 0);  // a 0 us stall is a save
}

TEST_CASE("step beat: the metric form carries a loss and an accuracy after the save form", "[step_heartbeat]") {
  StepBeat said{5, 90, kToken, 1000, 64};
  said.loss = 0.4123;
  const std::string b = EncodeStepBeat(said);
  CHECK(b.size() == kStepBeatMetricSize);
  CHECK(b.compare(0, kStepBeatLongSize, EncodeStepBeat({5, 90, kToken, 1000, 64})) == 0);
  auto beat = Decode(b);
  REQUIRE(beat);
  CHECK(beat->save_stall_micros == -1);  // no save since: -1 in the save form's place
  CHECK(beat->loss == 0.4123);
  CHECK(beat->accuracy != beat->accuracy);  // NaN: not said
  // What a Python worker sends: struct.pack('>qq', 5, 91) + token + struct.pack('>qqqdd', -1, -1, -1, 0.5, 0.875)
  const unsigned char tail[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                0x3f, 0xe0, 0, 0, 0, 0, 0, 0, 0x3f, 0xec, 0, 0, 0, 0, 0, 0};
  auto py = Decode(ShortForm(5, 91) + std::string(reinterpret_cast<const char*>(tail), sizeof(tail)));
  REQUIRE(py);
  CHECK(py->loss == 0.5);
  CHECK(py->accuracy == 0.875);
  CHECK(py->compute_micros == -1);
  // An infinite loss is not said.
  said.loss = std::numeric_limits<double>::infinity();
  said.accuracy = 0.25;
  auto inf = Decode(EncodeStepBeat(said));
  REQUIRE(inf);
  CHECK(inf->loss != inf->loss);
  CHECK(inf->accuracy == 0.25);
}

TEST_CASE("step beat: any other length is refused", "[step_heartbeat]") {
  const std::string b = EncodeStepBeat({5, 77, kToken, 1, 1, 7});
  for (size_t n = 0; n <= b.size() + 1; ++n) {
    if (n == kStepBeatSize || n == kStepBeatLongSize || n == kStepBeatSaveSize) continue;
    std::string cut = n <= b.size() ? b.substr(0, n) : b + "x";
    CHECK_FALSE(Decode(cut));
  }
}

}  // namespace
}  // namespace ds
