// manifest.json validated as a whole: every corruption is one error naming
// the field, never an exception (runtime/checkpoint/manifest.h).
#include <catch2/catch.hpp>

#include "runtime/checkpoint/manifest.h"

using namespace ds::rt;

namespace {

const std::string kGood = R"({
  "format": 2,
  "step": 7,
  "applied_steps": 6,
  "epoch": 1,
  "sample_position": 48,
  "rng": ["1", "2", "3", "18446744073709551615"],
  "loss_scale": 1024,
  "scaler_hysteresis": 2,
  "scaler_iter": 3,
  "scaler_last_overflow": -1,
  "run_id": "6b0735a0c0ffee00",
  "world_size": 2,
  "zero_stage": 1,
  "config_hash": "0badf00d",
  "num_params": 10,
  "state_slots": 2,
  "shards": [
    {"file": "shard_0.bin", "bytes": 176, "crc32": 4294967295},
    {"file": "shard_1.bin", "bytes": 176, "crc32": 1}
  ]
}
)";

// kGood with the first `from` replaced by `to`.
std::string With(const std::string& from, const std::string& to) {
  std::string s = kGood;
  size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

std::string ErrorOf(const std::string& text) {
  auto m = ParseManifest(text);
  return m.ok() ? "(ok)" : m.status().message();
}

}  // namespace

TEST_CASE("manifest: a good one parses whole", "[checkpoint]") {
  auto m = ParseManifest(kGood);
  REQUIRE(m.ok());
  CHECK(m->meta.step == 7);
  CHECK(m->meta.rng[3] == 18446744073709551615ULL);
  CHECK(m->meta.scaler.last_overflow_iter == -1);
  CHECK(m->meta.world_size == 2);
  CHECK(m->meta.run_id == "6b0735a0c0ffee00");
  CHECK(m->meta.config_hash == "0badf00d");
  REQUIRE(m->shards.size() == 2);
  CHECK(m->shards[0].crc32 == 4294967295u);
  CHECK(m->shards[1].file == "shard_1.bin");
}

TEST_CASE("manifest: format 1 (an older dstrain's) parses, its config hash not comparable and no run id",
          "[checkpoint]") {
  auto m = ParseManifest(With("  \"run_id\": \"6b0735a0c0ffee00\",\n", "").replace(0, 16, "{\n  \"format\": 1,"));
  REQUIRE(m.ok());
  CHECK(m->meta.run_id == "");
  CHECK(m->meta.config_hash == "");  // a crc32 of the whole config text there
  CHECK(m->meta.step == 7);
}

TEST_CASE("manifest: a string where a number belongs", "[checkpoint]") {
  CHECK(ErrorOf(With("\"step\": 7", "\"step\": \"seven\"")) ==
        "manifest.json: 'step': expected an integer >= 0, got 'seven'");
  CHECK(ErrorOf(With("\"loss_scale\": 1024", "\"loss_scale\": \"big\"")) ==
        "manifest.json: 'loss_scale': expected a positive number, got 'big'");
  CHECK(ErrorOf(With("\"bytes\": 176", "\"bytes\": \"many\"")) ==
        "manifest.json: 'shards[0].bytes': expected an integer >= 0, got 'many'");
  CHECK(ErrorOf(With("\"crc32\": 1", "\"crc32\": \"x\"")) ==
        "manifest.json: 'shards[1].crc32': expected an integer 0..4294967295, got 'x'");
  CHECK(ErrorOf(With("\"3\",", "\"three\",")) ==
        "manifest.json: 'rng': expected a list of 4 unsigned 64-bit integers");
}

TEST_CASE("manifest: a missing key", "[checkpoint]") {
  CHECK(ErrorOf(With("  \"epoch\": 1,\n", "")) == "manifest.json: 'epoch' is missing");
  CHECK(ErrorOf(With(", \"crc32\": 1", "")) == "manifest.json: 'shards[1].crc32' is missing");
  CHECK(ErrorOf(With("\"shards\"", "\"shard\"")) == "manifest.json: 'shards' is missing");
}

TEST_CASE("manifest: values out of range or of the wrong shape", "[checkpoint]") {
  CHECK(ErrorOf(With("\"format\": 2", "\"format\": 3")) ==
        "manifest.json: 'format' is 3, this dstrain reads formats 1 and 2");
  CHECK(ErrorOf(With("\"6b0735a0c0ffee00\"", "\"../x\"")) ==
        "manifest.json: 'run_id': expected 1 to 32 hex digits, got '../x'");
  CHECK(ErrorOf(With("\"0badf00d\"", "\"0bad f00d\"")) ==
        "manifest.json: 'config_hash': expected hex digits or \"\", got '0bad f00d'");
  CHECK(ErrorOf(With("\"0badf00d\"", "\"\"")) == "(ok)");  // not recorded: loads on its shape, with a warning
  CHECK(ErrorOf(With("  \"run_id\": \"6b0735a0c0ffee00\",\n", "")) == "manifest.json: 'run_id' is missing");
  CHECK(ErrorOf(With("\"world_size\": 2", "\"world_size\": 0")) ==
        "manifest.json: 'world_size': expected an integer 1..1048576, got '0'");
  CHECK(ErrorOf(With("\"world_size\": 2", "\"world_size\": 3")) ==
        "manifest.json: 'shards': expected a list of world_size = 3 shards");
  CHECK(ErrorOf(With("\"zero_stage\": 1", "\"zero_stage\": 4")) ==
        "manifest.json: 'zero_stage': expected an integer 0..3, got '4'");
  CHECK(ErrorOf(With("\"bytes\": 176", "\"bytes\": -1")) ==
        "manifest.json: 'shards[0].bytes': expected an integer >= 0, got '-1'");
  CHECK(ErrorOf(With("\"step\": 7", "\"step\": [7]")) ==
        "manifest.json: 'step': expected a value, got a list or map");
  CHECK(ErrorOf(With("shard_1.bin", "../../etc/shadow")) ==
        "manifest.json: 'shards[1].file' is '../../etc/shadow', expected 'shard_1.bin'");
  CHECK(ErrorOf("[1, 2]") == "manifest.json: expected a JSON object");
  CHECK(ErrorOf("") == "manifest.json: expected a JSON object");
}

TEST_CASE("manifest: truncated", "[checkpoint]") {
  CHECK(ErrorOf(kGood.substr(0, kGood.find("\"world_size\""))) ==
        "manifest.json:13:1: YAML syntax error: end of map flow not found");
  CHECK(ErrorOf(kGood.substr(0, kGood.find("\"bytes\""))) ==
        "manifest.json:19:1: YAML syntax error: end of map flow not found");
}
