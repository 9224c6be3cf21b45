#include "launcher/cmd/subcommand_typo.h"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace ds {
namespace {

const std::vector<std::string> kNames = {"run", "env", "check", "cluster", "status", "report", "completion"};

std::string ErrorOf(const std::string& word) {
  Status st = CheckSubcommandTypo(word, kNames, [](const std::string&) { return false; });
  REQUIRE_FALSE(st.ok());
  CHECK(st.code() == Status::Code::kInvalidArgument);
  return st.message();
}

TEST_CASE("subcommand typo: a near miss is an error naming the subcommand and the way to run it anyway") {
  CHECK(ErrorOf("statu") ==
        "unknown subcommand 'statu' (did you mean 'status'?); to run a program called 'statu' on every slot, "
        "put it after `--`: dslaunch [options] -- statu");
  CHECK(ErrorOf("stauts") ==
        "unknown subcommand 'stauts' (did you mean 'status'?); to run a program called 'stauts' on every slot, "
        "put it after `--`: dslaunch [options] -- stauts");
  CHECK(ErrorOf("chek") ==
        "unknown subcommand 'chek' (did you mean 'check'?); to run a program called 'chek' on every slot, "
        "put it after `--`: dslaunch [options] -- chek");
  CHECK(ErrorOf("reprot") ==
        "unknown subcommand 'reprot' (did you mean 'report'?); to run a program called 'reprot' on every slot, "
        "put it after `--`: dslaunch [options] -- reprot");
  CHECK(ErrorOf("clustr") ==
        "unknown subcommand 'clustr' (did you mean 'cluster'?); to run a program called 'clustr' on every slot, "
        "put it after `--`: dslaunch [options] -- clustr");
}

TEST_CASE("subcommand typo: subcommands, options, far words and programs pass") {
  auto ok = [](const std::string& word, bool program = false) {
    return CheckSubcommandTypo(word, kNames, [program](const std::string&) { return program; }).ok();
  };
  CHECK(ok("status"));
  CHECK(ok("-H"));
  CHECK(ok("--"));
  CHECK(ok(""));
  CHECK(ok("train.yaml"));
  CHECK(ok("python3"));
  CHECK(ok("true"));
  CHECK(ok("statu", /*program=*/true));
  CHECK(ok("chek", /*program=*/true));
}

TEST_CASE("subcommand typo: NamesProgram finds an executable on PATH and any existing file") {
  char dir_template[] = "/tmp/subcommand_typo_XXXXXX";
  const std::string dir = ::mkdtemp(dir_template);
  const std::string exe = dir + "/statu";
  std::ofstream(exe) << "#!/bin/sh\n";
  REQUIRE(::chmod(exe.c_str(), 0755) == 0);
  const std::string plain = dir + "/chek";
  std::ofstream(plain) << "not executable\n";
  CHECK(NamesProgram("statu", "/nonexistent:" + dir));
  CHECK_FALSE(NamesProgram("statu", "/nonexistent"));
  CHECK_FALSE(NamesProgram("chek", dir));  // on PATH but not executable
  CHECK(NamesProgram("./chek", ""));        // a path, whatever it holds
  char cwd[4096];
  REQUIRE(::getcwd(cwd, sizeof cwd) != nullptr);
  REQUIRE(::chdir(dir.c_str()) == 0);
  CHECK(NamesProgram("chek", ""));  // a file in the working directory
  REQUIRE(::chdir(cwd) == 0);
  ::unlink(exe.c_str());
  ::unlink(plain.c_str());
  ::rmdir(dir.c_str());
}

}  // namespace
}  // namespace ds
