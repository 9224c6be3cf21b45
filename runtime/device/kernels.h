// The device path's CUDA kernels, called from the host. Each one runs the
// per-element math of runtime/numeric/elementwise.h and half_bits.h, the very
// functions the CPU path and its tests run. Tensors are raw device pointers
// in a storage format (`Precision`: fp32, fp16 or bf16 as uint16_t bits);
// arithmetic is in fp32 (double where the CPU path uses double). Every call
// is queued on `stream` and checked at launch (DS_CUDA_LAUNCH); none
// synchronizes. Matrices are row-major, as in model.cc.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "runtime/config/training_options.h"
#include "runtime/numeric/elementwise.h"
#include "runtime/numeric/half.h"

namespace ds::rt::dev {

// z (rows x cols, in place) += bias (cols, broadcast over rows). When `a` is
// set it also receives act(z) (a hidden layer: z is kept for GELU's backward,
// a for ReLU's and for the next layer).
void BiasActivation(void* z, const void* bias, int rows, int cols, Precision fmt,
                    Activation act, void* a, cudaStream_t stream);

// dx (n, in place) *= act'(z): `saved` is z for GELU, a = relu(z) for ReLU.
void ActivationBackward(void* dx, const void* saved, size_t n, Precision fmt, Activation act,
                        cudaStream_t stream);

// db (cols) = (accumulate ? db : 0) + column sums of dz (rows x cols).
// The sums are in fp32, rounded once into fmt.
void BiasGrad(const void* dz, int rows, int cols, Precision fmt, void* db, bool accumulate,
              cudaStream_t stream);

// Softmax cross-entropy of each row of fp32 logits (rows x C) against
// labels. Each row's loss goes to row_loss[r] (rows doubles of scratch, 0
// for a bad label); *loss_sum becomes their sum, added in a fixed order
// (kSumLanes below), so the same rows give the same bits on every run
// (with `add`, the sum is added to *loss_sum: batches summed on the device
// in the order they are queued, also reproducible). Adds
// the rows whose first maximum is the label to *correct (on the device, for
// the caller to zero and read). When dlogits (rows x C, fp32) is set it
// receives grad_scale * (softmax - onehot). A label outside [0, C) sets
// *bad_label to 1.
void SoftmaxXent(const float* logits, const int32_t* labels, int rows, int C, float grad_scale,
                 float* dlogits, double* row_loss, double* loss_sum, unsigned long long* correct, int* bad_label,
                 bool add, cudaStream_t stream);

// The fixed order of SoftmaxXent's and GradSumOfSquares' final sums: lane
// t of kSumLanes adds elements t, t + kSumLanes, ... in turn, then the lanes
// are added pairwise, lane i += lane i + w for w = kSumLanes/2, ..., 1.
inline constexpr int kSumLanes = 256;

// A batch from a data set resident on the device: out row r (fmt) = row
// index[r] of `data` (rows x cols, fp32); labels_out[r] = labels[index[r]].
void GatherRows(const float* data, const int32_t* labels, const int64_t* index, int rows, int cols,
                void* out, Precision fmt, int32_t* labels_out, cudaStream_t stream);

// out (n, out_fmt) = in (n, in_fmt), rounded to nearest even (half_bits.h).
void Cast(const void* in, Precision in_fmt, void* out, Precision out_fmt, size_t n,
          cudaStream_t stream);

// dst (n) += src (n), summed in fp32 and rounded once into dst_fmt.
void Accumulate(void* dst, Precision dst_fmt, const void* src, Precision src_fmt, size_t n,
                cudaStream_t stream);

// dst (n, fp32) *= factor.
void Scale(float* dst, float factor, size_t n, cudaStream_t stream);

// One piece of the optimizer step: `len` elements at `master` in the fp32
// master weights, at `state` in the optimizer states (the rank's shard), at
// `grad` in the gradients, and at `compute` in the 16-bit compute copy. A
// rank's owned pieces (one per layer under ZeRO) are updated by one launch:
// the multi-tensor apply. `master` differs from `state` where the master
// weights are the full fp32 compute copy (fp32, stages 0-2).
struct UpdateSegment {
  size_t master = 0, state = 0, grad = 0, compute = 0, len = 0;
};

// Sum of squares (double) of the gradients' segments, into *out (device),
// in a fixed order (the same value every run). Inf or NaN anywhere makes it
// non-finite: the loss scaler's overflow check and the clip's global norm
// in one pass. `segments` is a device array of `count`; `scratch` holds
// NormScratchSize(count) doubles.
size_t NormScratchSize(int count);
void GradSumOfSquares(const UpdateSegment* segments, int count, const void* grads, Precision grad_fmt,
                      double* scratch, double* out, cudaStream_t stream);

// The optimizer step over `count` segments (a device array): the update of
// `plan` (Optimizer::Plan, grad_scale folded in), master and states in
// fp32; when `compute` is set the updated weights are also written there in
// compute_fmt (the 16-bit copy the model computes with).
void OptimizerUpdate(const ew::OptimizerStep& plan, const UpdateSegment* segments, int count,
                     size_t max_len, float* master, float* state0, float* state1, const void* grads,
                     Precision grad_fmt, void* compute, Precision compute_fmt, cudaStream_t stream);

// Bytes per element of a storage format.
inline size_t ElementSize(Precision fmt) { return fmt == Precision::kFp32 ? 4 : 2; }

}  // namespace ds::rt::dev
