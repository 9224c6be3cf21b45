// The test main every Catch2 executable links (ds_catch_main): Catch's own
// session, then the skip rule of tests/test_util/skip.h: every test case run
// skipped -> exit 77 (ctest: skipped) with the reasons; some -> a line naming
// them, and Catch's own exit code.
#define CATCH_CONFIG_RUNNER
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include <catch2/catch.hpp>

#include <cstdio>

#include "tests/test_util/skip.h"

namespace ds::testing {
namespace {

std::vector<std::string>& SkipList() {
  static std::vector<std::string> skips;
  return skips;
}

int cases_run = 0;
int cases_skipped = 0;
bool this_case_skipped = false;

struct CountCases : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseStarting(const Catch::TestCaseInfo&) override { this_case_skipped = false; }
  void testCaseEnded(const Catch::TestCaseStats&) override {
    ++cases_run;
    if (this_case_skipped) ++cases_skipped;
  }
};

}  // namespace

void RecordSkip(const std::string& reason) {
  this_case_skipped = true;
  SkipList().push_back(Catch::getResultCapture().getCurrentTestName() + ": " + reason);
  std::fprintf(stderr, "skipped: %s\n", SkipList().back().c_str());
}

const std::vector<std::string>& Skips() { return SkipList(); }

}  // namespace ds::testing

using DsCountCases = ds::testing::CountCases;  // the macro takes a plain name
CATCH_REGISTER_LISTENER(DsCountCases)

int main(int argc, char* argv[]) {
  const int failed = Catch::Session().run(argc, argv);
  using namespace ds::testing;
  if (failed != 0 || cases_skipped == 0) return failed;
  if (cases_skipped == cases_run) {
    std::fprintf(stderr, "skipped: all %d test cases run here (their preconditions are missing):\n", cases_run);
    for (const std::string& s : Skips()) std::fprintf(stderr, "  %s\n", s.c_str());
    return 77;
  }
  std::fprintf(stderr, "skipped %d of %d test cases:\n", cases_skipped, cases_run);
  for (const std::string& s : Skips()) std::fprintf(stderr, "  %s\n", s.c_str());
  return 0;
}
