// IDX reader on the installed Fashion-MNIST files and on broken copies in a
// temp dir; synthetic data; DistributedSampler semantics.
#include "runtime/model/data.h"

#include <catch2/catch.hpp>

#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "tests/test_util/temp_dir.h"
#include "tests/test_util/skip.h"

using namespace ds::rt;
namespace fs = std::filesystem;

using ds::testing::TempDir;

namespace {

const char* kDir = "/usr/share/datasets/fashion-mnist";


std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void Write(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

void WriteGz(const fs::path& p, const std::string& bytes) {
  gzFile f = gzopen(p.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

std::string Header(uint32_t magic, std::vector<uint32_t> dims) {
  std::string s;
  auto put = [&](uint32_t v) {
    for (int i = 3; i >= 0; --i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  put(magic);
  for (uint32_t d : dims) put(d);
  return s;
}

}  // namespace

TEST_CASE("Fashion-MNIST loads from the Debian package") {
  if (!fs::exists(std::string(kDir) + "/t10k-images-idx3-ubyte.gz")) {
    DS_SKIP("dataset-fashion-mnist is not installed (scripts/install-deps installs it)");
  }
  auto test = LoadFashionMnist(kDir, false, PixelNorm::kUnit);
  REQUIRE(test.ok());
  CHECK(test->n == 10000);
  CHECK(test->features == 784);
  CHECK(test->classes == 10);
  CHECK(test->y[0] == 9);  // ankle boot
  std::vector<int> counts(10);
  for (int32_t y : test->y) ++counts[y];
  CHECK(counts == std::vector<int>(10, 1000));
  CHECK(*std::max_element(test->x.begin(), test->x.end()) == 1.0f);
  CHECK(*std::min_element(test->x.begin(), test->x.end()) == 0.0f);
  auto norm = LoadFashionMnist(kDir, false);
  REQUIRE(norm.ok());
  CHECK(norm->x[0] == Approx(-0.2860f / 0.3530f));
}

TEST_CASE("IDX errors name the file") {
  TempDir tmp;
  const fs::path img = fs::path(tmp.path()) / "img.gz", lab = fs::path(tmp.path()) / "lab.gz";
  std::string pixels(2 * 4, '\x7f');
  WriteGz(img, Header(0x803, {2, 2, 2}) + pixels);
  WriteGz(lab, Header(0x801, {2}) + std::string("\x01\x02", 2));
  auto ok = LoadIdx(img, lab, PixelNorm::kUnit);
  REQUIRE(ok.ok());
  CHECK(ok->y == std::vector<int32_t>{1, 2});
  CHECK(ok->x[0] == Approx(127.0f / 255.0f));

  SECTION("missing") {
    auto r = LoadIdx((fs::path(tmp.path()) / "nope.gz").string(), lab);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() == (fs::path(tmp.path()) / "nope.gz").string() + ": no such file");
  }
  SECTION("bad magic") {
    WriteGz(img, Header(0x801, {2, 2, 2}) + pixels);
    auto r = LoadIdx(img, lab);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() ==
          img.string() + ": bad magic number 0x00000801, expected 0x00000803 (IDX images)");
  }
  SECTION("size does not match the header") {
    WriteGz(img, Header(0x803, {3, 2, 2}) + pixels);
    auto r = LoadIdx(img, lab);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() == img.string() + ": 24 bytes, expected 28 for 3 images of 2x2 (truncated)");
  }
  SECTION("label count differs") {
    WriteGz(lab, Header(0x801, {1}) + std::string("\x01", 1));
    auto r = LoadIdx(img, lab);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() == lab.string() + ": 1 labels, but " + img.string() + " has 2 images");
  }
  SECTION("label out of range") {
    WriteGz(lab, Header(0x801, {2}) + std::string("\x01\x0c", 2));
    auto r = LoadIdx(img, lab);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() == lab.string() + ": label 12 of sample 1 is out of range 0..9");
  }
  SECTION("truncated gzip stream") {
    const std::string whole = Slurp(img);
    Write(img, whole.substr(0, whole.size() / 2));
    auto r = LoadIdx(img, lab);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().rfind(img.string() + ": ", 0) == 0);
  }
  SECTION("plain (not gzip'd) files are read too") {
    Write(img, Header(0x803, {2, 2, 2}) + pixels);
    CHECK(LoadIdx(img, lab).ok());
  }
}

TEST_CASE("a truncated copy of the real file is rejected") {
  const fs::path real = fs::path(kDir) / "t10k-labels-idx1-ubyte.gz";
  if (!fs::exists(real)) DS_SKIP("dataset-fashion-mnist is not installed (scripts/install-deps installs it)");
  TempDir tmp;
  const std::string whole = Slurp(real);
  Write(fs::path(tmp.path()) / "lab.gz", whole.substr(0, whole.size() - 100));
  auto r = LoadIdx((fs::path(kDir) / "t10k-images-idx3-ubyte.gz").string(),
                   (fs::path(tmp.path()) / "lab.gz").string());
  REQUIRE_FALSE(r.ok());
  INFO(r.status().message());
  CHECK(r.status().message().rfind((fs::path(tmp.path()) / "lab.gz").string() + ": ", 0) == 0);
}

TEST_CASE("synthetic data is seeded and labelled in range") {
  SyntheticOptions o;
  o.samples = 100;
  o.features = 8;
  o.classes = 3;
  Dataset a = MakeSynthetic(o), b = MakeSynthetic(o);
  CHECK(a.x == b.x);
  CHECK(a.y == b.y);
  CHECK(std::all_of(a.y.begin(), a.y.end(), [](int32_t y) { return y >= 0 && y < 3; }));
  o.seed = 2;
  CHECK(MakeSynthetic(o).x != a.x);
}

TEST_CASE("DistributedSampler shards partition the epoch") {
  SamplerOptions o;
  o.dataset_size = 12;
  o.world_size = 3;
  o.seed = 5;
  std::multiset<int64_t> all;
  for (int r = 0; r < 3; ++r) {
    o.rank = r;
    auto idx = DistributedSampler(o).Indices(0);
    CHECK(idx.size() == 4);
    all.insert(idx.begin(), idx.end());
  }
  CHECK(all == std::multiset<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  o.rank = 0;
  DistributedSampler s(o);
  CHECK(s.Indices(0) == s.Indices(0));
  CHECK(s.Indices(0) != s.Indices(1));  // reshuffled per epoch
}

TEST_CASE("DistributedSampler pads by wrap-around or drops the tail") {
  SamplerOptions o;
  o.dataset_size = 10;
  o.world_size = 4;
  o.shuffle = false;
  o.rank = 1;
  CHECK(DistributedSampler(o).num_samples() == 3);
  CHECK(DistributedSampler(o).Indices(0) == std::vector<int64_t>{1, 5, 9});
  o.rank = 2;  // padded positions 10, 11 wrap to 0, 1
  CHECK(DistributedSampler(o).Indices(0) == std::vector<int64_t>{2, 6, 0});
  o.drop_last = true;
  CHECK(DistributedSampler(o).num_samples() == 2);
  CHECK(DistributedSampler(o).Indices(0) == std::vector<int64_t>{2, 6});
  o.dataset_size = 2;  // more ranks than samples: wraps repeatedly
  o.drop_last = false;
  o.world_size = 5;
  o.rank = 4;
  CHECK(DistributedSampler(o).Indices(0) == std::vector<int64_t>{0});
}

TEST_CASE("DistributedSampler resumes after consumed positions at another world size") {
  SamplerOptions o;
  o.dataset_size = 24;
  o.seed = 11;
  o.world_size = 1;
  const std::vector<int64_t> order = DistributedSampler(o).Indices(3);
  // 3 ranks consumed 2 samples each (6 positions); the rest goes to 2 ranks.
  o.world_size = 2;
  std::vector<int64_t> seen(order.begin(), order.begin() + 6);
  for (int r = 0; r < 2; ++r) {
    o.rank = r;
    auto idx = DistributedSampler(o).Indices(3, 6);
    CHECK(idx.size() == 9);
    CHECK(idx[0] == order[6 + r]);
    seen.insert(seen.end(), idx.begin(), idx.end());
  }
  std::sort(seen.begin(), seen.end());
  std::vector<int64_t> expect(24);
  for (int i = 0; i < 24; ++i) expect[i] = i;
  CHECK(seen == expect);
  CHECK(DistributedSampler(o).Indices(3, 24).empty());
}
