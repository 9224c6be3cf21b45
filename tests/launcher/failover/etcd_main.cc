// main() of the tests against a real etcd: without Debian's etcd on PATH
// they are not run and ctest reports them as skipped (exit 77,
// SKIP_RETURN_CODE), never as passed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include "tests/launcher/failover/etcd_bed.h"

int main(int argc, char** argv) {
  if (ds::testing::EtcdProgram().empty()) {
    std::printf("SKIPPED: etcd is not installed (Debian's etcd-server: scripts/install-deps)\n");
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
