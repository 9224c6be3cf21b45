#include "launcher/cluster/image_context.h"

#include <catch2/catch.hpp>

#include <filesystem>

#include "tests/launcher/cluster/fake_docker.h"
#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"

namespace ds {
namespace {

TEST_CASE("the image bundles the libraries ldd names, apart from glibc's and CUDA's", "[cluster]") {
  const std::string ldd =
      "\tlinux-vdso.so.1 (0x00007ffc)\n"
      "\tlibgloo.so.0 => /lib/libgloo.so.0 (0x00007f60)\n"
      "\tlibopenblas.so.0 => /usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0 (0x00007f60)\n"
      "\tlibstdc++.so.6 => /lib/x86_64-linux-gnu/libstdc++.so.6 (0x00007f60)\n"
      "\tlibm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x00007f60)\n"
      "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f60)\n"
      "\tlibnccl.so.2 => /usr/local/cuda/lib64/libnccl.so.2 (0x00007f60)\n"
      "\tlibcudart.so.13 => /opt/other/libcudart.so.13 (0x00007f60)\n"
      "\tlibcuda.so.1 => /usr/lib/x86_64-linux-gnu/libcuda.so.1 (0x00007f60)\n"
      "\tlibmissing.so.1 => not found\n"
      "\tlibgloo.so.0 => /lib/libgloo.so.0 (0x00007f60)\n"
      "\t/lib64/ld-linux-x86-64.so.2 (0x00007f60)\n";
  CHECK(LibrariesToBundle(ldd) == std::vector<std::string>{
                                      "/lib/libgloo.so.0",
                                      "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0",
                                      "/lib/x86_64-linux-gnu/libstdc++.so.6"});
  CHECK(LibrariesToBundle("\tstatically linked\n").empty());
}

TEST_CASE("the image carries dstrain's GPU plugin where it was built beside dstrain", "[cluster]") {
  testing::TempDir d;
  const std::string docker = d.path() + "/docker", build = d.path() + "/build";
  std::filesystem::create_directories(docker);
  std::filesystem::create_directories(build);
  for (const char* f : {"Dockerfile", "entrypoint.sh", "sshd_config"}) testing::WriteFile(docker + "/" + f, "x\n");
  for (const char* f : {"dslaunch", "dsagent", "dstrain"}) testing::WriteFile(build + "/" + f, "binary\n");
  const std::vector<std::string> binaries = {build + "/dslaunch", build + "/dsagent", build + "/dstrain"};
  testing::FakeDocker runner;
  const Status made = MakeImageContext(runner, docker, binaries, d.path() + "/context");
  INFO(made.message());
  REQUIRE(made.ok());
  CHECK_FALSE(std::filesystem::exists(d.path() + "/context/dslaunch/lib/libdstrain_cuda.so"));
  CHECK(std::filesystem::exists(d.path() + "/context/dslaunch/bin/dstrain"));
  testing::WriteFile(build + "/libdstrain_cuda.so", "plugin\n");
  REQUIRE(MakeImageContext(runner, docker, binaries, d.path() + "/context").ok());
  CHECK(testing::ReadFile(d.path() + "/context/dslaunch/lib/libdstrain_cuda.so") == "plugin\n");
  CHECK(runner.Count("ldd " + build + "/libdstrain_cuda.so") == 1);
}

}  // namespace
}  // namespace ds
