#include "runtime/device/gemm.h"

#include "runtime/device/check.h"

namespace ds::rt::dev {
namespace {

cudaDataType_t TypeOf(Precision f) {
  switch (f) {
    case Precision::kFp16: return CUDA_R_16F;
    case Precision::kBf16: return CUDA_R_16BF;
    case Precision::kFp32: break;
  }
  return CUDA_R_32F;
}

}  // namespace

Blas::Blas(cudaStream_t stream, bool allow_tf32) : allow_tf32_(allow_tf32) {
  DS_CUBLAS(cublasCreate(&handle_));
  DS_CUBLAS(cublasSetStream(handle_, stream));
  // Split-K partial sums in fp32 too, not in a 16-bit output's format (the
  // default allows that; an fp16 partial can overflow where the sum would
  // not, and the loss scaler would skip a step the CPU path takes).
  DS_CUBLAS(cublasSetMathMode(
      handle_, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
}

Blas::~Blas() { cublasDestroy(handle_); }

// cuBLAS is column-major: a row-major C (m x n) is a column-major C^T
// (n x m), and C^T = op(B)^T op(A)^T, so B goes first and m, n swap.
void Blas::Gemm(bool trans_a, bool trans_b, int m, int n, int k, const void* a, int lda,
                const void* b, int ldb, Precision ab_fmt, void* c, int ldc, Precision c_fmt,
                float beta) {
  const float alpha = 1.0f;
  const cublasComputeType_t compute = ab_fmt == Precision::kFp32 && allow_tf32_
                                          ? CUBLAS_COMPUTE_32F_FAST_TF32
                                          : CUBLAS_COMPUTE_32F;
  DS_CUBLAS(cublasGemmEx(handle_, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                         n, m, k, &alpha, b, TypeOf(ab_fmt), ldb, a, TypeOf(ab_fmt), lda, &beta, c,
                         TypeOf(c_fmt), ldc, compute, CUBLAS_GEMM_DEFAULT));
}

}  // namespace ds::rt::dev
