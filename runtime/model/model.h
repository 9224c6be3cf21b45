// Mlp: a multi-layer perceptron with softmax cross-entropy, computed layer by
// layer so that ZeRO stage 3 can gather a layer's parameters just before it
// is used and free them right after. Matrix products go through BLAS.
//
// Parameters live in one flat fp32 vector: layer l occupies
// [layer(l).offset, layer(l).offset + layer(l).size()) = W (out x in,
// row-major) followed by b (out). The model owns no parameters: it reads them
// through a ParamSource and hands gradients to a GradSink. One Mlp per
// thread (it keeps activation scratch buffers). The first Mlp of a process
// sets the BLAS thread count unless the caller already did (runtime/blas.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>
#include "runtime/config/training_options.h"

namespace ds::rt {

struct LayerShape {
  int in = 0;
  int out = 0;
  size_t offset = 0;  // of W in the flat vector; b follows at offset + in*out
  size_t size() const { return static_cast<size_t>(in) * out + out; }
};

// Supplies a layer's parameters (W then b, layer(l).size() floats) for the
// duration between Acquire and Release.
class ParamSource {
 public:
  virtual ~ParamSource() = default;
  virtual const float* Acquire(int layer) = 0;
  virtual void Release(int layer) = 0;
};

// Receives a layer's complete gradient (same layout as its parameters) during
// backward, last layer first. `grad` is valid only during the call.
class GradSink {
 public:
  virtual ~GradSink() = default;
  virtual void LayerGrad(int layer, const float* grad, size_t n) = 0;

  // Optional: a buffer of layer(l).size() floats that the model ADDS this
  // layer's gradient into (gradient accumulation without an extra copy or
  // zero-fill); LayerGrad is then called with `grad` pointing to that buffer,
  // which holds the accumulated sum. nullptr (default): LayerGrad receives
  // this batch's gradient alone, in the model's scratch buffer.
  virtual float* AccumulateInto(int layer) {
    (void)layer;
    return nullptr;
  }
};

struct BatchStats {
  double loss_sum = 0;  // sum over the batch of per-sample cross-entropy (unscaled)
  int64_t correct = 0;  // argmax == label
  int64_t count = 0;
  BatchStats& operator+=(const BatchStats& o) {
    loss_sum += o.loss_sum;
    correct += o.correct;
    count += o.count;
    return *this;
  }
};

class Mlp {
 public:
  explicit Mlp(MlpConfig config);

  size_t num_params() const;
  int num_layers() const;
  const LayerShape& layer(int l) const;
  const MlpConfig& config() const;

  // Fills params (num_params() floats) deterministically from seed
  // (PyTorch nn.Linear default: uniform(-1/sqrt(in), 1/sqrt(in))).
  void Init(float* params, uint64_t seed) const;

  // Forward and backward on `batch` samples (x: batch x sizes[0], y: labels).
  // Gradients are of grad_scale * sum_over_batch(loss), so the caller chooses
  // the normalization (1/global_batch) and the fp16 loss scale.
  BatchStats ForwardBackward(ParamSource& params, const float* x, const int32_t* y, int batch,
                             float grad_scale, GradSink& grads);

  // Forward only.
  BatchStats Evaluate(ParamSource& params, const float* x, const int32_t* y, int batch);

  // FLOPs per sample for forward+backward, counting a multiply-add as 2 and
  // leaving out the input gradient of the first layer (never computed).
  double FlopsPerSample() const;

 private:
  BatchStats Forward(ParamSource& params, const float* x, const int32_t* y, int batch,
                     float grad_scale, std::vector<float>* dlogits);

  MlpConfig config_;
  std::vector<LayerShape> layers_;
  size_t num_params_ = 0;
  std::vector<std::vector<float>> acts_;   // per layer input activations
  std::vector<std::vector<float>> pre_;    // pre-activation outputs
  std::vector<float> dcur_, dprev_, gradbuf_;
};

}  // namespace ds::rt
