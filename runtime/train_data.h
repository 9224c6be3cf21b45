// The trainer's data: the training and test sets named by the trainer
// config's data: section. Fashion-MNIST comes from its two IDX file pairs;
// a synthetic set is generated and its last sixth is the test set (same
// class centers as training). Pure apart from reading the files.
#pragma once

#include "common/status.h"
#include "runtime/config/trainer_config.h"
#include "runtime/model/data.h"

namespace ds::rt {

struct TrainTestData {
  Dataset train;
  Dataset test;
};

// The two sets; errors (NotFound, IOError, InvalidArgument) name the file.
Result<TrainTestData> LoadTrainTestData(const DataSection& data);

}  // namespace ds::rt
