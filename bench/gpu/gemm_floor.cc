// gpu_gemm_floor: the matrix-product floor of one training step of an MLP on
// this GPU, measured with cuBLAS alone: exactly the products DeviceMlp makes
// (forward, weight gradient, and the input gradient of every layer but the
// first) on random operands in the given format (uniform, the scale of
// nn.Linear's initialization: an H100's clock, so its GEMM rate, depends on
// the data; zeros flatter the floor), timed with CUDA events, best of
// several rounds. The products' inputs are never overwritten, so every
// round multiplies the same random values. Prints one line:
//   floor <fmt> <sizes> batch <b>: <ms> ms/step, <TFLOP/s>, <samples/s>
// bench/gpu/gpu_bench divides dstrain's FLOP rate by this one.
// Usage: gpu_gemm_floor fp32|fp16|bf16 BATCH SIZE0 SIZE1 ... [--tf32]
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/device/buffer.h"
#include "runtime/device/gemm.h"
#include "runtime/device/kernels.h"
#include "runtime/numeric/half.h"
#include "runtime/numeric/rng.h"

using namespace ds::rt;
using namespace ds::rt::dev;

// `buf` filled with uniform(-scale, scale) values stored in `fmt`.
static void FillRandom(DeviceBuffer<uint8_t>& buf, Precision fmt, double scale, uint64_t seed) {
  const size_t n = buf.size() / ElementSize(fmt);
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.Uniform(-scale, scale));
  if (fmt == Precision::kFp32) {
    DS_CUDA(cudaMemcpy(buf.data(), v.data(), buf.size(), cudaMemcpyHostToDevice));
    return;
  }
  std::vector<uint16_t> h(n);
  ToHalf16(v.data(), h.data(), n, fmt);
  DS_CUDA(cudaMemcpy(buf.data(), h.data(), buf.size(), cudaMemcpyHostToDevice));
}

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s fp32|fp16|bf16 BATCH SIZE0 SIZE1 ... [--tf32]\n", argv[0]);
    return 2;
  }
  const std::string f = argv[1];
  const Precision fmt = f == "bf16" ? Precision::kBf16 : f == "fp16" ? Precision::kFp16 : Precision::kFp32;
  const int batch = std::atoi(argv[2]);
  std::vector<int> sizes;
  bool tf32 = false;
  for (int i = 3; i < argc; ++i) {
    if (std::strcmp(argv[i], "--tf32") == 0) tf32 = true;
    else sizes.push_back(std::atoi(argv[i]));
  }
  try {
    Stream stream;
    Blas blas(stream.get(), tf32);
    const size_t es = ElementSize(fmt);
    int widest = batch;
    for (int s : sizes) widest = std::max(widest, s);
    // Operands: activations (batch x widest) and weights (widest x widest),
    // random: the values matter to the speed (power and clocks), zeros
    // would flatter the floor. Inputs act, w and the output gradient act2
    // are read only; the products write z, dw and dact.
    DeviceBuffer<uint8_t> act(static_cast<size_t>(batch) * widest * es), act2(act.size()), z(act.size()),
        dact(act.size()), w(static_cast<size_t>(widest) * widest * es), dw(w.size());
    FillRandom(act, fmt, 1.0, 1);
    FillRandom(act2, fmt, 1.0, 2);
    FillRandom(w, fmt, 1.0 / std::sqrt(static_cast<double>(widest)), 3);
    DS_CUDA(cudaDeviceSynchronize());
    double flops = 0;
    auto step = [&] {
      for (size_t l = 0; l + 1 < sizes.size(); ++l) {
        const int in = sizes[l], out = sizes[l + 1];
        blas.Gemm(false, true, batch, out, in, act.data(), in, w.data(), in, fmt, z.data(), out, fmt, 0.0f);
        blas.Gemm(true, false, out, in, batch, act2.data(), out, act.data(), in, fmt, dw.data(), in, fmt, 0.0f);
        if (l > 0) blas.Gemm(false, false, batch, in, out, act2.data(), out, w.data(), in, fmt, dact.data(), in, fmt, 0.0f);
      }
    };
    for (size_t l = 0; l + 1 < sizes.size(); ++l)
      flops += 2.0 * batch * sizes[l] * sizes[l + 1] * (l > 0 ? 3 : 2);
    for (int i = 0; i < 3; ++i) step();  // warm up (cuBLAS picks its kernels)
    cudaEvent_t start, stop;
    DS_CUDA(cudaEventCreate(&start));
    DS_CUDA(cudaEventCreate(&stop));
    double best = 1e30;
    for (int round = 0; round < 5; ++round) {
      const int reps = 20;
      DS_CUDA(cudaEventRecord(start, stream.get()));
      for (int i = 0; i < reps; ++i) step();
      DS_CUDA(cudaEventRecord(stop, stream.get()));
      DS_CUDA(cudaEventSynchronize(stop));
      float ms = 0;
      DS_CUDA(cudaEventElapsedTime(&ms, start, stop));
      best = std::min(best, static_cast<double>(ms) / reps);
    }
    std::string shape;
    for (size_t i = 0; i < sizes.size(); ++i) shape += (i ? "-" : "") + std::to_string(sizes[i]);
    std::printf("floor %s %s batch %d: %.3f ms/step, %.1f TFLOP/s, %.0f samples/s\n", f.c_str(), shape.c_str(),
                batch, best, flops / (best * 1e-3) / 1e12, batch / (best * 1e-3));
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  } catch (const DeviceError& e) {
    std::fprintf(stderr, "gpu_gemm_floor: %s\n", e.what());
    return 1;
  }
  return 0;
}
