// DeviceMlp: the Mlp's forward and backward on the GPU, layer by layer as
// model.cc does it, so that ZeRO-3 can gather a layer just before its use.
// The shapes, the flat parameter layout (W then b per layer) and the
// initialization are the Mlp's own; the products go through cuBLAS (gemm.h),
// everything else through the kernels of kernels.h, which run the CPU path's
// per-element math.
//
// Parameters, activations and gradients are stored in one format (`fmt`:
// fp32, or fp16/bf16 as DeepSpeed's 16-bit modes compute); the logits are
// turned to fp32 for the softmax cross-entropy, whose gradient goes back in
// `fmt`. All work is queued on one stream. The calls on host batches and
// Evaluate synchronize once at the end, to read the batch's loss and
// accuracy; QueueForwardBackward (a batch already on the device) does not
// wait at all: its loss and accuracy are added up on the device until
// TakeTrainStats reads them (the trainer does once per steps_per_print).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "runtime/device/buffer.h"
#include "runtime/device/gemm.h"
#include "runtime/model/model.h"

namespace ds::rt::dev {

// Supplies a layer's parameters on the device (layer(l).size() elements in
// the model's format) between Acquire and Release. Release is called once
// the layer's last use is queued on the model's stream: what it frees must
// be freed in stream order (cudaFreeAsync on that stream, or after an event).
// Prefetch(l) says that layer l is the next one Acquired, and comes before
// the work of the layer in use is queued: a source that gathers (ZeRO-3)
// starts it there, so it overlaps that work. Every layer prefetched is
// Acquired and Released before the batch ends.
class DeviceParamSource {
 public:
  virtual ~DeviceParamSource() = default;
  virtual const void* Acquire(int layer) = 0;
  virtual void Release(int layer) = 0;
  virtual void Prefetch(int) {}
};

// Receives each layer's gradient during backward, last layer first.
class DeviceGradSink {
 public:
  virtual ~DeviceGradSink() = default;
  // Where the model puts layer l's gradient (layer(l).size() elements in the
  // model's format): assigned, or added to what is there when `accumulate`.
  struct Target {
    void* data = nullptr;
    bool accumulate = false;
  };
  virtual Target GradTarget(int layer) = 0;
  // The layer's gradient is queued on the model's stream (record an event
  // there to start its reduction on another stream).
  virtual void LayerGrad(int layer) = 0;
};

class DeviceMlp {
 public:
  // How the host waits for the stream (a DeviceComm's deadline-bounded
  // Synchronize when collectives feed it); empty: cudaStreamSynchronize.
  using Synchronize = std::function<void(cudaStream_t)>;

  // `shape` gives the layers; it must outlive this object.
  DeviceMlp(const Mlp& shape, Precision fmt, cudaStream_t stream, bool allow_tf32, Synchronize sync = {});

  const Mlp& shape() const { return shape_; }
  Precision format() const { return fmt_; }
  cudaStream_t stream() const { return stream_; }

  // As Mlp::ForwardBackward: x (batch x sizes[0]) and y in host memory;
  // gradients of grad_scale * sum(loss) go to `grads`.
  BatchStats ForwardBackward(DeviceParamSource& params, const float* x, const int32_t* y, int batch,
                             float grad_scale, DeviceGradSink& grads);
  BatchStats Evaluate(DeviceParamSource& params, const float* x, const int32_t* y, int batch);

  // A batch produced on the device (a data set resident in GPU memory):
  // PrepareInput gives the buffers for `batch` samples (x in the model's
  // format), which the caller fills by work queued on stream(); then
  // QueueForwardBackward or the Evaluate without x and y runs on them.
  struct Input {
    void* x = nullptr;
    int32_t* y = nullptr;
  };
  Input PrepareInput(int batch);
  void QueueForwardBackward(DeviceParamSource& params, int batch, float grad_scale, DeviceGradSink& grads);
  BatchStats Evaluate(DeviceParamSource& params, int batch);
  // The loss and accuracy sums of every QueueForwardBackward since the last
  // call (one host wait); zero without any.
  BatchStats TakeTrainStats();

 private:
  struct Stats {  // on the device: a batch's, or a sum of batches'
    double loss = 0;
    unsigned long long correct = 0;
    int bad_label = 0;
  };
  void Upload(const float* x, const int32_t* y, int batch);
  // Into `stats`: assigned (the batch's own), or added to what it holds.
  void Forward(DeviceParamSource& params, int batch, float grad_scale, bool backward, Stats* stats, bool add);
  void Backward(DeviceParamSource& params, int batch, DeviceGradSink& grads);
  // `stats` (device) read by the host, after a wait for the stream.
  BatchStats Read(const Stats* stats, int64_t count);
  void* At(DeviceBuffer<uint8_t>& b, size_t elements);  // b grown to `elements` in fmt_

  const Mlp& shape_;
  const Precision fmt_;
  const cudaStream_t stream_;
  const Synchronize sync_;
  Blas blas_;
  const size_t esize_;  // bytes per element of fmt_
  // Per layer: its input (acts_[0] is the batch) and its pre-activation output.
  std::vector<DeviceBuffer<uint8_t>> acts_, pre_;
  const void* kept_ = nullptr;  // the last layer's parameters, from forward to backward
  DeviceBuffer<uint8_t> dcur_, dprev_;
  DeviceBuffer<float> x32_, logits_, dlogits_;
  DeviceBuffer<double> row_loss_;  // each sample's loss, summed in a fixed order
  DeviceBuffer<int32_t> labels_;
  PinnedBuffer<float> x_host_;
  PinnedBuffer<int32_t> y_host_;
  DeviceBuffer<Stats> stats_;          // one batch's
  DeviceBuffer<Stats> train_totals_;   // QueueForwardBackward's since TakeTrainStats
  int64_t train_count_ = 0;            // their samples
  PinnedBuffer<Stats> stats_host_;
};

}  // namespace ds::rt::dev
