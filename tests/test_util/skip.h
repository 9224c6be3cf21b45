// A test case whose precondition is missing says so and ends, and the run
// says "skipped", never "passed": `if (NotRoot()) DS_SKIP("not root");`.
// The test main (tests/catch_main.cc) counts the test cases it ran and those
// that skipped; when every one skipped it prints the reasons and exits 77,
// which each ctest entry declares as SKIP_RETURN_CODE, so ctest lists the
// entry as skipped with its reason. A run where some cases skipped and others
// ran names the skipped ones in a line and exits as usual: keep cases with a
// precondition under their own tag and ctest entry (tests/CMakeLists.txt:
// ds_catch_test ... NEEDS tag). Catch2 2.x has no skip of its own. Not
// thread-safe: the test's main thread only.
#pragma once

#include <string>
#include <vector>

namespace ds::testing {

// Records that the running test case skipped, and why.
void RecordSkip(const std::string& reason);

// Every skip recorded so far: "<test case>: <reason>".
const std::vector<std::string>& Skips();

}  // namespace ds::testing

// Ends the calling TEST_CASE (or a void function it calls last) as skipped.
#define DS_SKIP(reason)                      \
  do {                                       \
    ::ds::testing::RecordSkip(reason);       \
    return;                                  \
  } while (0)
