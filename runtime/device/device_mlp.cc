#include "runtime/device/device_mlp.h"

#include <cstring>
#include <utility>

#include "common/check.h"
#include "runtime/device/kernels.h"

namespace ds::rt::dev {

DeviceMlp::DeviceMlp(const Mlp& shape, Precision fmt, cudaStream_t stream, bool allow_tf32, Synchronize sync)
    : shape_(shape),
      fmt_(fmt),
      stream_(stream),
      sync_(std::move(sync)),
      blas_(stream, allow_tf32),
      esize_(ElementSize(fmt)),
      acts_(shape.num_layers()),
      pre_(shape.num_layers()),
      stats_(1),
      train_totals_(1),
      stats_host_(1) {
  DS_CUDA(cudaMemsetAsync(train_totals_.data(), 0, sizeof(Stats), stream_));
}

void* DeviceMlp::At(DeviceBuffer<uint8_t>& b, size_t elements) { return b.Reserve(elements * esize_); }

namespace {

// p advanced by n elements of `esize` bytes.
const void* Offset(const void* p, size_t n, size_t esize) { return static_cast<const uint8_t*>(p) + n * esize; }
void* Offset(void* p, size_t n, size_t esize) { return static_cast<uint8_t*>(p) + n * esize; }

}  // namespace

// The batch to the device through pinned buffers (the previous host
// batch's copies are done: each such batch ends with a synchronize), then
// into fmt_.
void DeviceMlp::Upload(const float* x, const int32_t* y, int batch) {
  const size_t nx = static_cast<size_t>(batch) * shape_.layer(0).in;
  std::memcpy(x_host_.Reserve(nx), x, nx * sizeof(float));
  std::memcpy(y_host_.Reserve(batch), y, batch * sizeof(int32_t));
  const Input in = PrepareInput(batch);
  CopyToDevice(x32_.Reserve(nx), x_host_.data(), nx, stream_);
  CopyToDevice(in.y, y_host_.data(), batch, stream_);
  Cast(x32_.data(), Precision::kFp32, in.x, fmt_, nx, stream_);
}

DeviceMlp::Input DeviceMlp::PrepareInput(int batch) {
  return {At(acts_[0], static_cast<size_t>(batch) * shape_.layer(0).in), labels_.Reserve(batch)};
}

// Layer by layer: z = x W^T + b, then the activation into the next layer's
// input; the last layer's z are the logits, turned to fp32 for the loss.
// With `backward`, the logits' gradient goes to dcur_ in fmt_, and the last
// layer's parameters stay acquired (kept_) for backward's first product,
// which releases them (ZeRO-3 would gather them again). Each layer's
// successor is prefetched before its products are queued.
void DeviceMlp::Forward(DeviceParamSource& params, int batch, float grad_scale, bool backward, Stats* stats,
                        bool add) {
  const int L = shape_.num_layers();
  const Activation act = shape_.config().activation;
  for (int l = 0; l < L; ++l) {
    const LayerShape& s = shape_.layer(l);
    const size_t n_out = static_cast<size_t>(batch) * s.out;
    void* z = At(pre_[l], n_out);
    const void* w = params.Acquire(l);
    if (l + 1 < L) params.Prefetch(l + 1);
    blas_.Gemm(false, true, batch, s.out, s.in, acts_[l].data(), s.in, w, s.in, fmt_, z, s.out, fmt_, 0.0f);
    void* a = l + 1 < L ? At(acts_[l + 1], n_out) : nullptr;
    BiasActivation(z, Offset(w, static_cast<size_t>(s.in) * s.out, esize_), batch, s.out, fmt_, act, a, stream_);
    if (backward && l == L - 1 && l > 0) kept_ = w;  // backward's first product; it releases it
    else params.Release(l);
  }
  const int C = shape_.layer(L - 1).out;
  const size_t n = static_cast<size_t>(batch) * C;
  Cast(pre_[L - 1].data(), fmt_, logits_.Reserve(n), Precision::kFp32, n, stream_);
  if (!add) DS_CUDA(cudaMemsetAsync(stats, 0, sizeof(Stats), stream_));
  SoftmaxXent(logits_.data(), labels_.data(), batch, C, grad_scale, backward ? dlogits_.Reserve(n) : nullptr,
              row_loss_.Reserve(batch), &stats->loss, &stats->correct, &stats->bad_label, add, stream_);
  if (backward) Cast(dlogits_.data(), Precision::kFp32, At(dcur_, n), fmt_, n, stream_);
}

BatchStats DeviceMlp::Read(const Stats* stats, int64_t count) {
  CopyToHost(stats_host_.data(), stats, 1, stream_);
  if (sync_) sync_(stream_);
  else DS_CUDA(cudaStreamSynchronize(stream_));
  const Stats& s = stats_host_[0];
  DS_CHECK_MSG(s.bad_label == 0, "a label outside [0, classes) reached the device model");
  BatchStats out;
  out.loss_sum = s.loss;
  out.correct = static_cast<int64_t>(s.correct);
  out.count = count;
  return out;
}

BatchStats DeviceMlp::ForwardBackward(DeviceParamSource& params, const float* x, const int32_t* y, int batch,
                                      float grad_scale, DeviceGradSink& grads) {
  Upload(x, y, batch);
  Forward(params, batch, grad_scale, true, stats_.data(), false);
  Backward(params, batch, grads);
  return Read(stats_.data(), batch);
}

void DeviceMlp::QueueForwardBackward(DeviceParamSource& params, int batch, float grad_scale,
                                     DeviceGradSink& grads) {
  Forward(params, batch, grad_scale, true, train_totals_.data(), true);
  Backward(params, batch, grads);
  train_count_ += batch;
}

BatchStats DeviceMlp::TakeTrainStats() {
  if (train_count_ == 0) return {};
  const BatchStats out = Read(train_totals_.data(), std::exchange(train_count_, 0));
  DS_CUDA(cudaMemsetAsync(train_totals_.data(), 0, sizeof(Stats), stream_));
  return out;
}

void DeviceMlp::Backward(DeviceParamSource& params, int batch, DeviceGradSink& grads) {
  const Activation act = shape_.config().activation;
  for (int l = shape_.num_layers() - 1; l >= 0; --l) {
    // The next layer whose parameters backward needs (l - 1, unless it is
    // the first, which has no dX), before this layer's gradient is handed
    // over: a source that gathers and reduces on one stream then runs the
    // gather first, and the product that waits for it does not also wait
    // for this layer's reduction.
    if (l - 1 > 0) params.Prefetch(l - 1);
    const LayerShape& s = shape_.layer(l);
    const DeviceGradSink::Target target = grads.GradTarget(l);
    const float beta = target.accumulate ? 1.0f : 0.0f;
    // dW (out x in) = dZ^T X; db = column sums of dZ.
    blas_.Gemm(true, false, s.out, s.in, batch, dcur_.data(), s.out, acts_[l].data(), s.in, fmt_, target.data,
               s.in, fmt_, beta);
    BiasGrad(dcur_.data(), batch, s.out, fmt_, Offset(target.data, static_cast<size_t>(s.in) * s.out, esize_),
             target.accumulate, stream_);
    grads.LayerGrad(l);
    if (l > 0) {
      // dX (batch x in) = dZ W, then back through the activation.
      const size_t n = static_cast<size_t>(batch) * s.in;
      const void* w = l == shape_.num_layers() - 1 ? std::exchange(kept_, nullptr) : params.Acquire(l);
      blas_.Gemm(false, false, batch, s.in, s.out, dcur_.data(), s.out, w, s.in, fmt_, At(dprev_, n), s.in, fmt_,
                 0.0f);
      params.Release(l);
      const void* saved = act == Activation::kGelu ? pre_[l - 1].data() : acts_[l].data();
      ActivationBackward(dprev_.data(), saved, n, fmt_, act, stream_);
      std::swap(dcur_, dprev_);
    }
  }
}

BatchStats DeviceMlp::Evaluate(DeviceParamSource& params, const float* x, const int32_t* y, int batch) {
  Upload(x, y, batch);
  return Evaluate(params, batch);
}

BatchStats DeviceMlp::Evaluate(DeviceParamSource& params, int batch) {
  Forward(params, batch, 0.0f, false, stats_.data(), false);
  return Read(stats_.data(), batch);
}

}  // namespace ds::rt::dev
