// main() of the gpu-label tests: with no usable GPU the tests are not run
// and ctest reports them as skipped (exit 77, SKIP_RETURN_CODE), with the
// CUDA runtime's reason printed; never as passed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include "runtime/device/device_info.h"

int main(int argc, char** argv) {
  const ds::rt::dev::GpuSurvey survey = ds::rt::dev::SurveyGpus();
  if (survey.gpus.empty()) {
    std::printf("SKIPPED: %s\n", survey.why_none.c_str());
    return 77;
  }
  std::printf("GPU 0: %s\n", ds::rt::dev::Describe(survey.gpus[0]).c_str());
  return Catch::Session().run(argc, argv);
}
