#include "launcher/config/job_env.h"

#include <catch2/catch.hpp>

#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"

namespace ds {
namespace {

using testing::TempDir;
using testing::WriteFile;

TEST_CASE("job env: DeepSpeed's prefixes are forwarded, nothing else, dslaunch's own never") {
  KeyValues launcher = {{"NCCL_DEBUG", "INFO"},       {"PYTHONHASHSEED", "0"}, {"HOME", "/root"},
                       {"UCX_TLS", "rc"},            {"MV2_X", "1"},          {"FI_PROVIDER", "efa"},
                       {"FILE", "not FI_"},          {"MLFLOW_URI", "u"},     {"NCCLX", "prefix match"},
                       {"PATH", "/bin"},             {"MY_NCCL", "middle"}};
  KeyValues got = ForwardedEnv(launcher, DefaultForwardEnv());
  KeyValues want = {{"NCCL_DEBUG", "INFO"}, {"PYTHONHASHSEED", "0"}, {"UCX_TLS", "rc"},     {"MV2_X", "1"},
                   {"FI_PROVIDER", "efa"}, {"MLFLOW_URI", "u"},     {"NCCLX", "prefix match"}};
  CHECK(got == want);
  CHECK(ForwardedEnv(launcher, {}).empty());
  CHECK(ForwardedEnv({{"DSLAUNCH_JOB_ID", "x"}, {"DSLAUNCH_LOG", "INFO"}}, {"DSLAUNCH_"}) ==
        KeyValues{{"DSLAUNCH_LOG", "INFO"}});
}

TEST_CASE("job env: values are forwarded byte for byte") {
  const std::string odd = "a b\t'\"$HOME `x` \\ \n\xff";
  CHECK(ForwardedEnv({{"NCCL_ODD", odd}}, {"NCCL"}) == KeyValues{{"NCCL_ODD", odd}});
}

TEST_CASE("job env: MergeEnv keeps one entry per name, later wins in place") {
  KeyValues env = {{"A", "1"}, {"B", "2"}};
  MergeEnv(env, {{"B", "3"}, {"C", "4"}, {"A", "5"}});
  CHECK(env == KeyValues{{"A", "5"}, {"B", "3"}, {"C", "4"}});
}

TEST_CASE("job env: the working directory is made absolute against the launcher's") {
  CHECK(AbsoluteWorkingDir("", "/home/u/proj") == "/home/u/proj");
  CHECK(AbsoluteWorkingDir(".", "/home/u/proj") == "/home/u/proj");
  CHECK(AbsoluteWorkingDir("sub/dir", "/home/u/proj") == "/home/u/proj/sub/dir");
  CHECK(AbsoluteWorkingDir("./sub", "/home/u/proj") == "/home/u/proj/sub");
  CHECK(AbsoluteWorkingDir("sub", "/") == "/sub");
  CHECK(AbsoluteWorkingDir("/srv/job", "/home/u/proj") == "/srv/job");
}

TEST_CASE("job env: sources in DeepSpeed's order, then ours, then env:") {
  TempDir home, wd;
  WriteFile(home / ".deepspeed_env", "A=home-ds\nB=home-ds\nC=home-ds\nD=home-ds\n");
  WriteFile(wd / ".deepspeed_env", "B=wd-ds\nC=wd-ds\nD=wd-ds\n");
  WriteFile(home / ".dslaunch_env", "C=home-dl\nD=home-dl\n");
  WriteFile(wd / ".dslaunch_env", "D=wd-dl\nE=wd-dl\n");
  JobSpec job;
  job.working_dir = wd.path();
  job.env = {{"E", "job"}, {"NCCL_DEBUG", "WARN"}};
  KeyValues launcher = {{"HOME", home.path()}, {"NCCL_DEBUG", "INFO"}, {"PYTHONPATH", "/lib/py"}, {"A", "launcher"}};
  REQUIRE(ResolveJobEnv(job, launcher).ok());
  KeyValues want = {{"NCCL_DEBUG", "WARN"},
                   {"PYTHONPATH", wd.path() + ":/lib/py"},
                   {"A", "home-ds"},
                   {"B", "wd-ds"},
                   {"C", "home-dl"},
                   {"D", "wd-dl"},
                   {"E", "job"}};
  CHECK(job.env == want);
}

TEST_CASE("job env: PYTHONPATH is the working directory alone when the launcher has none") {
  TempDir wd;
  JobSpec job;
  job.working_dir = wd.path();
  REQUIRE(ResolveJobEnv(job, {}).ok());
  CHECK(job.env == KeyValues{{"PYTHONPATH", wd.path()}});
  job.env = {{"PYTHONPATH", "/mine"}};  // the user's own value wins
  REQUIRE(ResolveJobEnv(job, {{"PYTHONPATH", "/lib"}}).ok());
  CHECK(job.env == KeyValues{{"PYTHONPATH", "/mine"}});
}

TEST_CASE("job env: DS_ENV_FILE names another file, relative (home, then wd) or absolute") {
  TempDir home, wd, elsewhere;
  WriteFile(home / "my.env", "X=home\nY=home\n");
  WriteFile(wd / "my.env", "Y=wd\n");
  WriteFile(wd / ".deepspeed_env", "Z=not read when DS_ENV_FILE is set\n");
  WriteFile(elsewhere / "abs.env", "X=abs\n");
  JobSpec job;
  job.working_dir = wd.path();
  job.forward_env = {};
  REQUIRE(ResolveJobEnv(job, {{"HOME", home.path()}, {"DS_ENV_FILE", "my.env"}}).ok());
  CHECK(job.env == KeyValues{{"PYTHONPATH", wd.path()}, {"X", "home"}, {"Y", "wd"}});
  job.env.clear();
  REQUIRE(ResolveJobEnv(job, {{"HOME", home.path()}, {"DS_ENV_FILE", elsewhere / "abs.env"}}).ok());
  CHECK(job.env == KeyValues{{"PYTHONPATH", wd.path()}, {"X", "abs"}});
  job.env.clear();
  Status missing = ResolveJobEnv(job, {{"HOME", home.path()}, {"DS_ENV_FILE", "nope.env"}});
  CHECK(missing.message() == "DS_ENV_FILE names 'nope.env', but there is no " + home.path() + "/nope.env or " +
                                 wd.path() + "/nope.env");
}

TEST_CASE("job env: a .deepspeed_env that sets a variable dslaunch owns is an error naming file:line") {
  TempDir wd;
  WriteFile(wd / ".deepspeed_env", "NCCL_DEBUG=INFO\nRANK=3\n");
  JobSpec job;
  job.working_dir = wd.path();
  Status s = ResolveJobEnv(job, {});
  CHECK(s.message() == wd.path() + "/.deepspeed_env:2: RANK is set by dslaunch for every worker and cannot be "
                                   "overridden");
}

}  // namespace
}  // namespace ds
