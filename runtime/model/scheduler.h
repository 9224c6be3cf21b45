// Learning-rate schedules with DeepSpeed's names and formulas
// (deepspeed/runtime/lr_schedules.py). A schedule is a pure function of the
// iteration, so the only state to checkpoint is the step count.
//
// Convention: the optimizer step with 0-based index k uses iteration k
// (DeepSpeed's last_batch_iteration = k). DeepSpeed calls scheduler.step()
// after each optimizer step, so there the very first step runs with the lr
// set at construction; we take iteration 0 for it instead.
#pragma once

#include <cstdint>
#include <string>
#include "runtime/config/training_options.h"

namespace ds::rt {

// The learning rate at `iteration`.
//  WarmupLR:       min + (max-min)*gamma, gamma = log(it+1)/log(W) (log) or
//                  it/W (linear) while it < W, then 1.
//  WarmupDecayLR:  as WarmupLR, then gamma = max(0, (T-it)/max(1, T-W)).
//  WarmupCosineLR: base_lr * ratio; warmup ratio = wmr + (1-wmr)*gamma; then
//                  ratio = max(0, cmr + (1-cmr)*(1+cos(pi*(it-W+1)/(T-W)))/2),
//                  with it clamped to T so the cosine never rises again.
//  None:           base_lr.
// base_lr is the optimizer's lr (only WarmupCosineLR and None use it).
double LearningRate(const SchedulerConfig& config, double base_lr, int64_t iteration);

// "WarmupLR", "WarmupDecayLR", "WarmupCosineLR", "none".
const char* SchedulerTypeName(SchedulerType type);

}  // namespace ds::rt
