// Matrix products on the device through cuBLAS, in the row-major terms of
// model.cc: C (m x n) = op(A) (m x k) * op(B) (k x n) + beta * C. A and B
// share a storage format (fp32, fp16 or bf16); C is that format or fp32
// (the last layer's logits). Accumulation is always fp32: 16-bit inputs run
// on the tensor cores; fp32 inputs use TF32 tensor cores when allow_tf32
// (PyTorch's torch.backends.cuda.matmul.allow_tf32), exact fp32 otherwise.
// One Blas per stream; not thread-safe.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "runtime/numeric/half.h"

namespace ds::rt::dev {

class Blas {
 public:
  Blas(cudaStream_t stream, bool allow_tf32);
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;
  ~Blas();

  // ld* are row-major leading dimensions (the row length as stored).
  void Gemm(bool trans_a, bool trans_b, int m, int n, int k, const void* a, int lda, const void* b,
            int ldb, Precision ab_fmt, void* c, int ldc, Precision c_fmt, float beta);

  bool allow_tf32() const { return allow_tf32_; }

 private:
  cublasHandle_t handle_ = nullptr;
  bool allow_tf32_;
};

}  // namespace ds::rt::dev
