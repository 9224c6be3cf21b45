#include "runtime/model/data.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "common/check.h"
#include "runtime/numeric/rng.h"

namespace ds::rt {
namespace {

constexpr uint32_t kImagesMagic = 0x00000803;  // unsigned byte, 3 dimensions
constexpr uint32_t kLabelsMagic = 0x00000801;  // unsigned byte, 1 dimension
constexpr float kFashionMean = 0.2860f;
constexpr float kFashionStd = 0.3530f;
constexpr int64_t kMaxFileBytes = int64_t{1} << 31;

// Reads a whole file through zlib (gzip'd or plain).
Result<std::vector<uint8_t>> ReadGz(const std::string& path) {
  struct stat sb;
  if (::stat(path.c_str(), &sb) != 0) return Status::NotFound(path + ": no such file");
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return Status::IOError(path + ": cannot open");
  std::vector<uint8_t> out;
  std::vector<uint8_t> chunk(1 << 20);
  for (;;) {
    const int got = gzread(f, chunk.data(), static_cast<unsigned>(chunk.size()));
    if (got < 0 || static_cast<int64_t>(out.size()) > kMaxFileBytes) {
      int err = 0;
      std::string msg = got < 0 ? gzerror(f, &err) : "larger than 2 GiB";
      gzclose(f);
      return Status::IOError(path + ": corrupt gzip data (" + msg + ")");
    }
    if (got == 0) break;
    out.insert(out.end(), chunk.begin(), chunk.begin() + got);
  }
  int err = 0;
  const char* msg = gzerror(f, &err);
  if (err != Z_OK && err != Z_STREAM_END) {
    std::string m = msg;
    gzclose(f);
    return Status::IOError(path + ": corrupt gzip data (" + m + ")");
  }
  if (gzclose(f) != Z_OK) return Status::IOError(path + ": corrupt gzip data (bad trailer)");
  return out;
}

uint32_t BigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

}  // namespace

Result<Dataset> LoadIdx(const std::string& images_path, const std::string& labels_path,
                        PixelNorm norm) {
  DS_ASSIGN_OR_RETURN(std::vector<uint8_t> img, ReadGz(images_path));
  DS_ASSIGN_OR_RETURN(std::vector<uint8_t> lab, ReadGz(labels_path));
  if (img.size() < 16)
    return Status::InvalidArgument(fmt::format(
        "{}: truncated IDX header ({} bytes, expected at least 16)", images_path, img.size()));
  if (BigEndian32(img.data()) != kImagesMagic)
    return Status::InvalidArgument(fmt::format(
        "{}: bad magic number 0x{:08x}, expected 0x{:08x} (IDX images)", images_path,
        BigEndian32(img.data()), kImagesMagic));
  const int64_t n = BigEndian32(img.data() + 4);
  const int64_t rows = BigEndian32(img.data() + 8);
  const int64_t cols = BigEndian32(img.data() + 12);
  const int64_t features = rows * cols;
  if (n <= 0 || rows <= 0 || cols <= 0 || features > (1 << 20))
    return Status::InvalidArgument(fmt::format("{}: implausible dimensions {} x {} x {}",
                                               images_path, n, rows, cols));
  const int64_t want_img = 16 + n * features;
  if (static_cast<int64_t>(img.size()) != want_img)
    return Status::InvalidArgument(fmt::format(
        "{}: {} bytes, expected {} for {} images of {}x{}{}", images_path, img.size(), want_img,
        n, rows, cols, static_cast<int64_t>(img.size()) < want_img ? " (truncated)" : ""));

  if (lab.size() < 8)
    return Status::InvalidArgument(fmt::format(
        "{}: truncated IDX header ({} bytes, expected at least 8)", labels_path, lab.size()));
  if (BigEndian32(lab.data()) != kLabelsMagic)
    return Status::InvalidArgument(fmt::format(
        "{}: bad magic number 0x{:08x}, expected 0x{:08x} (IDX labels)", labels_path,
        BigEndian32(lab.data()), kLabelsMagic));
  const int64_t nl = BigEndian32(lab.data() + 4);
  if (nl != n)
    return Status::InvalidArgument(fmt::format("{}: {} labels, but {} has {} images",
                                               labels_path, nl, images_path, n));
  if (static_cast<int64_t>(lab.size()) != 8 + n)
    return Status::InvalidArgument(fmt::format(
        "{}: {} bytes, expected {} for {} labels{}", labels_path, lab.size(), 8 + n, n,
        static_cast<int64_t>(lab.size()) < 8 + n ? " (truncated)" : ""));

  Dataset d;
  d.n = n;
  d.features = static_cast<int>(features);
  d.classes = 10;
  d.y.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t v = lab[8 + i];
    if (v >= d.classes)
      return Status::InvalidArgument(fmt::format("{}: label {} of sample {} is out of range 0..9",
                                                 labels_path, v, i));
    d.y[i] = v;
  }
  d.x.resize(n * features);
  const float scale = norm == PixelNorm::kMeanStd ? 1.0f / (255.0f * kFashionStd) : 1.0f / 255.0f;
  const float shift = norm == PixelNorm::kMeanStd ? -kFashionMean / kFashionStd : 0.0f;
  const uint8_t* px = img.data() + 16;
  for (int64_t i = 0; i < n * features; ++i) d.x[i] = px[i] * scale + shift;
  return d;
}

Result<Dataset> LoadFashionMnist(const std::string& dir, bool train, PixelNorm norm) {
  const std::string prefix = dir + "/" + (train ? "train" : "t10k");
  return LoadIdx(prefix + "-images-idx3-ubyte.gz", prefix + "-labels-idx1-ubyte.gz", norm);
}

Dataset MakeSynthetic(const SyntheticOptions& o) {
  Rng rng(o.seed);
  std::vector<float> centers(static_cast<size_t>(o.classes) * o.features);
  for (float& c : centers) c = static_cast<float>(rng.Normal());
  Dataset d;
  d.n = o.samples;
  d.features = o.features;
  d.classes = o.classes;
  d.x.resize(static_cast<size_t>(o.samples) * o.features);
  d.y.resize(o.samples);
  constexpr double kNoise = 1.7320508075688772 * 1.5;  // uniform noise with std 1.5
  for (int64_t i = 0; i < o.samples; ++i) {
    const int label = static_cast<int>(rng.Below(o.classes));
    d.y[i] = label;
    const float* c = centers.data() + static_cast<size_t>(label) * o.features;
    float* x = d.x.data() + static_cast<size_t>(i) * o.features;
    for (int f = 0; f < o.features; ++f)
      x[f] = c[f] + static_cast<float>(kNoise * (2.0 * rng.Uniform() - 1.0));
  }
  return d;
}

DistributedSampler::DistributedSampler(SamplerOptions options) : options_(options) {
  DS_CHECK(options_.world_size >= 1);
  DS_CHECK(options_.rank >= 0 && options_.rank < options_.world_size);
  DS_CHECK(options_.dataset_size >= 0);
}

namespace {

// PyTorch's per-rank count for m remaining positions.
int64_t PerRank(int64_t m, int64_t world, bool drop_last) {
  if (drop_last) return m / world;
  return (m + world - 1) / world;
}

}  // namespace

int64_t DistributedSampler::num_samples() const {
  return PerRank(options_.dataset_size, options_.world_size, options_.drop_last);
}

std::vector<int64_t> DistributedSampler::Indices(int64_t epoch, int64_t consumed) const {
  const int64_t n = options_.dataset_size;
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  if (options_.shuffle) {
    Rng rng(options_.seed + static_cast<uint64_t>(epoch));
    for (int64_t i = n - 1; i > 0; --i)
      std::swap(order[i], order[rng.Below(static_cast<uint64_t>(i) + 1)]);
  }
  consumed = std::clamp<int64_t>(consumed, 0, n);
  std::vector<int64_t> rest(order.begin() + consumed, order.end());
  const int64_t m = static_cast<int64_t>(rest.size());
  const int64_t world = options_.world_size;
  const int64_t total = PerRank(m, world, options_.drop_last) * world;
  if (m == 0) return {};
  // Pad by wrapping around (possibly several times) or cut the tail.
  for (int64_t i = m; static_cast<int64_t>(rest.size()) < total; ++i) rest.push_back(rest[i % m]);
  rest.resize(total);
  std::vector<int64_t> mine;
  mine.reserve(total / world);
  for (int64_t i = options_.rank; i < total; i += world) mine.push_back(rest[i]);
  return mine;
}

}  // namespace ds::rt
