// The device kernels (kernels.h). Each is a grid-stride loop over its
// elements calling the shared per-element math; the storage format is a
// template parameter chosen once per launch (Dispatch).
#include "runtime/device/kernels.h"

#include <algorithm>
#include <type_traits>

#include "runtime/device/check.h"
#include "runtime/numeric/half_bits.h"

namespace ds::rt::dev {
namespace {

constexpr int kThreads = 256;
static_assert(kThreads == kSumLanes, "SumKernel adds in the order kernels.h documents");
constexpr int kNormBlocks = 128;  // per segment, for the sum of squares

template <Precision F>
using Fmt = std::integral_constant<Precision, F>;

// Calls fn(Fmt<f>{}) for the runtime format f: the kernels' formats are
// template parameters, so their loads and stores have no branch.
template <typename Fn>
void Dispatch(Precision f, Fn fn) {
  switch (f) {
    case Precision::kFp32: fn(Fmt<Precision::kFp32>{}); return;
    case Precision::kFp16: fn(Fmt<Precision::kFp16>{}); return;
    case Precision::kBf16: fn(Fmt<Precision::kBf16>{}); return;
  }
}

template <Precision F>
__device__ __forceinline__ float Load(const void* p, size_t i) {
  if constexpr (F == Precision::kFp32) return static_cast<const float*>(p)[i];
  else if constexpr (F == Precision::kFp16) return HalfToFloat(static_cast<const uint16_t*>(p)[i]);
  else return Bf16ToFloat(static_cast<const uint16_t*>(p)[i]);
}

template <Precision F>
__device__ __forceinline__ void Store(void* p, size_t i, float v) {
  if constexpr (F == Precision::kFp32) static_cast<float*>(p)[i] = v;
  else if constexpr (F == Precision::kFp16) static_cast<uint16_t*>(p)[i] = FloatToHalf(v);
  else static_cast<uint16_t*>(p)[i] = FloatToBf16(v);
}

// v rounded to what format F stores.
template <Precision F>
__device__ __forceinline__ float Round(float v) {
  if constexpr (F == Precision::kFp32) return v;
  else if constexpr (F == Precision::kFp16) return HalfToFloat(FloatToHalf(v));
  else return Bf16ToFloat(FloatToBf16(v));
}

// A runtime-format store, for the optimizer's optional 16-bit copy.
__device__ __forceinline__ void StoreAs(Precision f, void* p, size_t i, float v) {
  if (f == Precision::kFp16) Store<Precision::kFp16>(p, i, v);
  else if (f == Precision::kBf16) Store<Precision::kBf16>(p, i, v);
  else Store<Precision::kFp32>(p, i, v);
}

unsigned Blocks(size_t n) {
  return static_cast<unsigned>(std::clamp<size_t>((n + kThreads - 1) / kThreads, 1, 1u << 16));
}

#define DS_GRID_STRIDE(i, n) \
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<size_t>(gridDim.x) * blockDim.x)

template <Precision F>
__global__ void BiasActivationKernel(void* z, const void* bias, size_t n, int cols, Activation act,
                                     void* a) {
  DS_GRID_STRIDE(i, n) {
    const float v = Round<F>(Load<F>(z, i) + Load<F>(bias, i % cols));
    Store<F>(z, i, v);
    if (a != nullptr) Store<F>(a, i, act == Activation::kGelu ? ew::Gelu(v) : ew::Relu(v));
  }
}

template <Precision F>
__global__ void ActivationBackwardKernel(void* dx, const void* saved, size_t n, Activation act) {
  DS_GRID_STRIDE(i, n) {
    const float d = Load<F>(dx, i), s = Load<F>(saved, i);
    Store<F>(dx, i, act == Activation::kGelu ? d * ew::GeluGrad(s) : ew::ReluBackward(s, d));
  }
}

// Block (32 x 8): x runs along the columns (coalesced), y splits the rows;
// the 8 partial sums are added in a fixed order.
template <Precision F>
__global__ void BiasGradKernel(const void* dz, int rows, int cols, void* db, bool accumulate) {
  __shared__ float part[8][32];
  const int c = blockIdx.x * 32 + threadIdx.x;
  float sum = 0;
  if (c < cols)
    for (int r = threadIdx.y; r < rows; r += 8) sum += Load<F>(dz, static_cast<size_t>(r) * cols + c);
  part[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y != 0 || c >= cols) return;
  float total = 0;
  for (int y = 0; y < 8; ++y) total += part[y][threadIdx.x];
  Store<F>(db, c, accumulate ? Load<F>(db, c) + total : total);
}

// Each row's loss into row_loss[r] (0 for a bad label); SumKernel adds
// them in a fixed order afterwards (an atomicAdd of doubles would add them
// in whatever order the threads arrive: not reproducible run to run).
// `correct` is an integer count: its atomicAdd is exact in any order.
__global__ void SoftmaxXentKernel(const float* logits, const int32_t* labels, int rows, int C,
                                  float grad_scale, float* dlogits, double* row_loss,
                                  unsigned long long* correct, int* bad_label) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const int label = labels[r];
  const size_t at = static_cast<size_t>(r) * C;
  if (label < 0 || label >= C) {  // the host fails the batch; until then no garbage gradient
    *bad_label = 1;
    row_loss[r] = 0.0;
    if (dlogits != nullptr)
      for (int c = 0; c < C; ++c) dlogits[at + c] = 0.0f;
    return;
  }
  bool ok = false;
  const double loss =
      ew::SoftmaxXent(logits + at, C, label, grad_scale, dlogits ? dlogits + at : nullptr, &ok);
  row_loss[r] = loss;
  if (ok) atomicAdd(correct, 1ull);
}

template <Precision F>
__global__ void GatherRowsKernel(const float* data, const int32_t* labels, const int64_t* index, int rows,
                                 int cols, void* out, int32_t* labels_out) {
  const size_t n = static_cast<size_t>(rows) * cols;
  DS_GRID_STRIDE(i, n) {
    const size_t r = i / cols, c = i % cols;
    Store<F>(out, i, data[static_cast<size_t>(index[r]) * cols + c]);
    if (c == 0) labels_out[r] = labels[index[r]];
  }
}

template <Precision In, Precision Out>
__global__ void CastKernel(const void* in, void* out, size_t n) {
  DS_GRID_STRIDE(i, n) Store<Out>(out, i, Load<In>(in, i));
}

template <Precision D, Precision S>
__global__ void AccumulateKernel(void* dst, const void* src, size_t n) {
  DS_GRID_STRIDE(i, n) Store<D>(dst, i, Load<D>(dst, i) + Load<S>(src, i));
}

__global__ void ScaleKernel(float* dst, float factor, size_t n) {
  DS_GRID_STRIDE(i, n) dst[i] *= factor;
}

// Grid (kNormBlocks, segments): block (x, s) sums the squares of its
// strided share of segment s into part[s * kNormBlocks + x].
template <Precision G>
__global__ void SumSquaresKernel(const UpdateSegment* segs, const void* grads, double* part) {
  __shared__ double shared[kThreads];
  const UpdateSegment seg = segs[blockIdx.y];
  double sum = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(kThreads) + threadIdx.x; i < seg.len;
       i += static_cast<size_t>(kNormBlocks) * kThreads) {
    const double g = Load<G>(grads, seg.grad + i);
    sum += g * g;
  }
  shared[threadIdx.x] = sum;
  __syncthreads();
  for (int width = kThreads / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) shared[threadIdx.x] += shared[threadIdx.x + width];
    __syncthreads();
  }
  if (threadIdx.x == 0) part[blockIdx.y * kNormBlocks + blockIdx.x] = shared[0];
}

// One block adds the n partial sums in a fixed order.
// *out = (add ? *out : 0) + the sum of part[0..n), in the fixed order.
__global__ void SumKernel(const double* part, size_t n, double* out, bool add) {
  __shared__ double shared[kThreads];
  double sum = 0;
  for (size_t i = threadIdx.x; i < n; i += kThreads) sum += part[i];
  shared[threadIdx.x] = sum;
  __syncthreads();
  for (int width = kThreads / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) shared[threadIdx.x] += shared[threadIdx.x + width];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = add ? *out + shared[0] : shared[0];
}

// Grid (blocks, segments): the multi-tensor optimizer step.
template <Precision G>
__global__ void OptimizerKernel(ew::OptimizerStep plan, const UpdateSegment* segs, float* master,
                                float* s0, float* s1, const void* grads, void* compute,
                                Precision compute_fmt) {
  const UpdateSegment seg = segs[blockIdx.y];
  DS_GRID_STRIDE(i, seg.len) {
    float& p = master[seg.master + i];
    const float g = Load<G>(grads, seg.grad + i);
    switch (plan.kind) {
      case ew::OptimizerStep::Kind::kSgd: ew::Sgd(p, g, plan.sgd); break;
      case ew::OptimizerStep::Kind::kSgdMomentum: ew::SgdMomentum(p, g, s0[seg.state + i], plan.sgd); break;
      case ew::OptimizerStep::Kind::kAdam:
        ew::Adam(p, g, s0[seg.state + i], s1[seg.state + i], plan.adam);
        break;
    }
    if (compute != nullptr) StoreAs(compute_fmt, compute, seg.compute + i, p);
  }
}

}  // namespace

void BiasActivation(void* z, const void* bias, int rows, int cols, Precision fmt, Activation act,
                    void* a, cudaStream_t stream) {
  const size_t n = static_cast<size_t>(rows) * cols;
  if (n == 0) return;
  Dispatch(fmt, [&](auto f) {
    DS_CUDA_LAUNCH(BiasActivationKernel<decltype(f)::value><<<Blocks(n), kThreads, 0, stream>>>(z, bias, n, cols, act, a));
  });
}

void ActivationBackward(void* dx, const void* saved, size_t n, Precision fmt, Activation act,
                        cudaStream_t stream) {
  if (n == 0) return;
  Dispatch(fmt, [&](auto f) {
    DS_CUDA_LAUNCH(ActivationBackwardKernel<decltype(f)::value><<<Blocks(n), kThreads, 0, stream>>>(dx, saved, n, act));
  });
}

void BiasGrad(const void* dz, int rows, int cols, Precision fmt, void* db, bool accumulate,
              cudaStream_t stream) {
  if (cols == 0) return;
  const dim3 block(32, 8), grid((cols + 31) / 32);
  Dispatch(fmt, [&](auto f) {
    DS_CUDA_LAUNCH(BiasGradKernel<decltype(f)::value><<<grid, block, 0, stream>>>(dz, rows, cols, db, accumulate));
  });
}

void SoftmaxXent(const float* logits, const int32_t* labels, int rows, int C, float grad_scale,
                 float* dlogits, double* row_loss, double* loss_sum, unsigned long long* correct, int* bad_label,
                 bool add, cudaStream_t stream) {
  if (rows == 0) return;
  DS_CUDA_LAUNCH(SoftmaxXentKernel<<<(rows + kThreads - 1) / kThreads, kThreads, 0, stream>>>(
      logits, labels, rows, C, grad_scale, dlogits, row_loss, correct, bad_label));
  DS_CUDA_LAUNCH(SumKernel<<<1, kThreads, 0, stream>>>(row_loss, static_cast<size_t>(rows), loss_sum, add));
}

void GatherRows(const float* data, const int32_t* labels, const int64_t* index, int rows, int cols,
                void* out, Precision fmt, int32_t* labels_out, cudaStream_t stream) {
  const size_t n = static_cast<size_t>(rows) * cols;
  if (n == 0) return;
  Dispatch(fmt, [&](auto f) {
    DS_CUDA_LAUNCH(GatherRowsKernel<decltype(f)::value>
        <<<Blocks(n), kThreads, 0, stream>>>(data, labels, index, rows, cols, out, labels_out));
  });
}

void Cast(const void* in, Precision in_fmt, void* out, Precision out_fmt, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  Dispatch(in_fmt, [&](auto i) {
    Dispatch(out_fmt, [&](auto o) {
      DS_CUDA_LAUNCH(CastKernel<decltype(i)::value, decltype(o)::value><<<Blocks(n), kThreads, 0, stream>>>(in, out, n));
    });
  });
}

void Accumulate(void* dst, Precision dst_fmt, const void* src, Precision src_fmt, size_t n,
                cudaStream_t stream) {
  if (n == 0) return;
  Dispatch(dst_fmt, [&](auto d) {
    Dispatch(src_fmt, [&](auto s) {
      DS_CUDA_LAUNCH(AccumulateKernel<decltype(d)::value, decltype(s)::value><<<Blocks(n), kThreads, 0, stream>>>(dst, src, n));
    });
  });
}

void Scale(float* dst, float factor, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  DS_CUDA_LAUNCH(ScaleKernel<<<Blocks(n), kThreads, 0, stream>>>(dst, factor, n));
}

size_t NormScratchSize(int count) { return static_cast<size_t>(std::max(count, 1)) * kNormBlocks; }

void GradSumOfSquares(const UpdateSegment* segments, int count, const void* grads, Precision grad_fmt,
                      double* scratch, double* out, cudaStream_t stream) {
  if (count == 0) {
    DS_CUDA(cudaMemsetAsync(out, 0, sizeof(double), stream));
    return;
  }
  Dispatch(grad_fmt, [&](auto g) {
    DS_CUDA_LAUNCH(SumSquaresKernel<decltype(g)::value>
        <<<dim3(kNormBlocks, count), kThreads, 0, stream>>>(segments, grads, scratch));
  });
  DS_CUDA_LAUNCH(SumKernel<<<1, kThreads, 0, stream>>>(scratch, NormScratchSize(count), out, false));
}

void OptimizerUpdate(const ew::OptimizerStep& plan, const UpdateSegment* segments, int count,
                     size_t max_len, float* master, float* state0, float* state1, const void* grads,
                     Precision grad_fmt, void* compute, Precision compute_fmt, cudaStream_t stream) {
  if (count == 0 || max_len == 0) return;
  const dim3 grid(Blocks(max_len), count);
  Dispatch(grad_fmt, [&](auto g) {
    DS_CUDA_LAUNCH(OptimizerKernel<decltype(g)::value><<<grid, kThreads, 0, stream>>>(
        plan, segments, master, state0, state1, grads, compute, compute_fmt));
  });
}

}  // namespace ds::rt::dev
