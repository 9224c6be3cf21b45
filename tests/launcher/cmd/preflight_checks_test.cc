// What dslaunch check asks and how it judges. [unit]: evaluation and the
// table, word for word. [process]: the probe script run by sh here, with a
// stand-in nvidia-smi.
#include "launcher/cmd/preflight_checks.h"

#include <cstdio>
#include <filesystem>

#include <catch2/catch.hpp>

#include "common/strings.h"
#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"

namespace ds {
namespace {

HostEntry Host(const std::string& name, int slots, int line) {
  HostEntry h;
  h.name = name;
  h.slots = slots;
  h.line = line;
  return h;
}

PreflightOptions Opts() {
  PreflightOptions o;
  o.agent_path = "/opt/ds/dsagent";
  o.working_dir = "/work";
  o.master_port = 29500;
  o.local_version = "0.1.0";
  return o;
}

const char* kGoodProbe =
    "agent=ok dsagent 0.1.0\nwd=ok\ncpus=8\ngpus=0\nown=\nroute=10.0.0.1 dev eth1 src 10.0.0.2 uid 0\nport=free\n"
    "time=1.0\n";

// A probe's lines for a host whose GPUs nvidia-smi listed.
std::string GpuProbe(const std::vector<std::string>& gpu_lines) {
  std::string probe = "agent=ok dsagent 0.1.0\nwd=ok\ncpus=64\n";
  for (const auto& g : gpu_lines) probe += "gpu=" + g + "\n";
  probe += "gpus=" + std::to_string(gpu_lines.size()) + "\nown=eth0\nport=free\ntime=1.0\n";
  return probe;
}

// Runs the probe script with sh, `tmp`/bin first on PATH and a stand-in
// dsagent of Opts()'s version; its stdout.
std::string RunProbeScript(const testing::TempDir& tmp) {
  PreflightOptions o = Opts();
  o.agent_path = tmp / "dsagent";
  o.working_dir = "";
  testing::WriteFile(o.agent_path, "#!/bin/sh\necho 'dsagent " + o.local_version + "'\n");
  std::filesystem::permissions(o.agent_path, std::filesystem::perms::owner_all);
  testing::WriteFile(tmp / "probe.sh", ProbeScript(o, "", false));
  std::string cmd = "PATH=" + ShellQuote(tmp / "bin") + ":\"$PATH\" sh " + ShellQuote(tmp / "probe.sh");
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
  CHECK(pclose(p) == 0);
  return out;
}

// The probe's lines that start with `prefix`, in order.
std::vector<std::string> LinesStartingWith(const std::string& out, const std::string& prefix) {
  std::vector<std::string> lines;
  for (const auto& line : Split(out, '\n'))
    if (StartsWith(line, prefix)) lines.push_back(line);
  return lines;
}

// What the probe says without a working nvidia-smi on this machine: the
// driver's count in /proc.
std::string ProcGpusLine() {
  const std::filesystem::path dir = "/proc/driver/nvidia/gpus";
  if (!std::filesystem::is_directory(dir)) return "gpus=0";
  auto n = std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator());
  return "gpus=" + std::to_string(n);
}

// A stand-in nvidia-smi in `tmp`/bin running `body`.
void FakeNvidiaSmi(const testing::TempDir& tmp, const std::string& body) {
  std::filesystem::create_directories(tmp / "bin");
  testing::WriteFile(tmp / "bin/nvidia-smi", "#!/bin/sh\n" + body);
  std::filesystem::permissions(tmp / "bin/nvidia-smi", std::filesystem::perms::owner_all);
}

const char* kSmiFailure =
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA "
    "driver is installed and running.";

}  // namespace

TEST_CASE("EvaluateProbe: a ready host", "[unit]") {
  PreflightRow r = EvaluateProbe(Host("w1", 4, 2), "10.0.0.2", kGoodProbe, 0.01, 0.001, Opts());
  CHECK(r.ok());
  CHECK(r.ssh.text == "10.0.0.2");
  CHECK(r.agent.text == "0.1.0");
  CHECK(r.slots.text == "4/8 cpus");
  CHECK(r.iface.text == "eth1 10.0.0.2");
  CHECK(r.port.text == "free");
  CHECK(r.clock.text == "+0.010s");
}

TEST_CASE("EvaluateProbe: every failure is named with the host", "[unit]") {
  std::string probe =
      "agent=missing\nwd=missing\ncpus=2\ngpus=0\nown=eth0\nport=busy\ntime=1.0\n";
  PreflightRow r = EvaluateProbe(Host("w0", 4, 1), "10.0.0.1", probe, -3.5, 0.001, Opts());
  CHECK_FALSE(r.ok());
  CHECK(r.problems == std::vector<std::string>{
                          "w0: no dsagent at /opt/ds/dsagent (install it there, set --agent-path, or use --ship-agent)",
                          "w0: working directory /work does not exist",
                          "w0: slots=4 (hostfile line 1) but the host has 2 CPUs",
                          "w0: master port 29500 is already in use",
                          "w0: clock skew -3.500s exceeds 2s (run NTP/chrony on the nodes)",
                      });
  CHECK(r.iface.text == "eth0 (master)");
}

TEST_CASE("EvaluateProbe: GPUs count instead of CPUs; version mismatch; ship-agent", "[unit]") {
  std::string probe = "agent=ok dsagent 0.0.9\nwd=skip\ncpus=64\ngpus=2\nroute=RTNETLINK answers: Network is unreachable\ntime=1\n";
  PreflightRow r = EvaluateProbe(Host("g", 4, 7), "", probe, 0, 0, Opts());
  CHECK(r.problems == std::vector<std::string>{
                          "g: dsagent at /opt/ds/dsagent reports 'dsagent 0.0.9', expected version 0.1.0 (the launcher's)",
                          "g: slots=4 (hostfile line 7) but the host has 2 GPUs",
                          "g: no route to the master: RTNETLINK answers: Network is unreachable",
                      });
  PreflightOptions o = Opts();
  o.ship_agent = true;
  CHECK(EvaluateProbe(Host("g", 2, 7), "", probe, 0, 0, o).agent.text == "shipped");
}

TEST_CASE("EvaluateProbe: eight GPUs of one model: slots against their count, the model once", "[unit]") {
  std::vector<std::string> gpus;
  for (int i = 0; i < 8; ++i) gpus.push_back(std::to_string(i) + ",NVIDIA H100 80GB HBM3,81559");
  PreflightRow r = EvaluateProbe(Host("g1", 8, 3), "", GpuProbe(gpus), 0, 0, Opts());
  CHECK(r.ok());
  CHECK(r.slots.ok);
  CHECK(r.slots.text == "8/8 gpus (H100 80GB HBM3)");
}

TEST_CASE("EvaluateProbe: more slots than nvidia-smi's GPUs fails with the hostfile line", "[unit]") {
  PreflightRow r = EvaluateProbe(Host("g2", 4, 5), "", GpuProbe({"0,NVIDIA A100-SXM4-40GB,40960",
                                                                 "1,NVIDIA A100-SXM4-40GB,40960"}), 0, 0, Opts());
  CHECK_FALSE(r.slots.ok);
  CHECK(r.slots.text == "4/2 gpus (A100-SXM4-40GB)");
  CHECK(r.problems == std::vector<std::string>{"g2: slots=4 (hostfile line 5) but the host has 2 GPUs"});
}

TEST_CASE("EvaluateProbe: GPUs of different models read 'mixed'", "[unit]") {
  PreflightRow r = EvaluateProbe(Host("g3", 2, 1), "", GpuProbe({"0,NVIDIA H100 80GB HBM3,81559",
                                                                 "1,NVIDIA A100-SXM4-80GB,81920"}), 0, 0, Opts());
  CHECK(r.ok());
  CHECK(r.slots.text == "2/2 gpus (mixed)");
}

TEST_CASE("EvaluateProbe: a failing nvidia-smi fails the host with its message", "[unit]") {
  std::string probe = "agent=ok dsagent 0.1.0\nwd=ok\ncpus=64\ngpuerr=" + std::string(kSmiFailure) +
                      "\ngpus=8\nown=eth0\nport=free\ntime=1.0\n";
  PreflightRow r = EvaluateProbe(Host("g4", 8, 2), "", probe, 0, 0, Opts());
  CHECK_FALSE(r.slots.ok);
  CHECK(r.slots.text == "nvidia-smi");
  CHECK(r.problems == std::vector<std::string>{"g4: nvidia-smi failed: " + std::string(kSmiFailure)});
  CHECK(r.agent.ok);
  CHECK(r.workdir.ok);
  CHECK(FormatPreflightTable({r}).find("FAIL nvidia-smi") != std::string::npos);
}

// The driver loaded on a node without a GPU: nvidia-smi exits 6 with these
// words. A CPU host when the driver's count agrees; a failure when it does not
// (a GPU the driver has but nvidia-smi cannot see).
TEST_CASE("EvaluateProbe: 'No devices were found' on a node whose driver has no GPU counts CPUs", "[unit]") {
  const std::string none = "agent=ok dsagent 0.1.0\nwd=ok\ncpus=8\ngpuerr=No devices were found\ngpus=0\n"
                           "own=eth0\nport=free\ntime=1.0\n";
  PreflightRow cpu = EvaluateProbe(Host("c2", 8, 5), "", none, 0, 0, Opts());
  CHECK(cpu.ok());
  CHECK(cpu.slots.text == "8/8 cpus");

  std::string lost = none;
  lost.replace(lost.find("gpus=0"), 6, "gpus=4");
  PreflightRow gpu = EvaluateProbe(Host("g5", 4, 6), "", lost, 0, 0, Opts());
  CHECK(gpu.problems == std::vector<std::string>{"g5: nvidia-smi failed: No devices were found"});
}

TEST_CASE("EvaluateProbe: a host without GPUs counts CPUs, as before", "[unit]") {
  PreflightRow ok = EvaluateProbe(Host("c1", 8, 4), "", kGoodProbe, 0, 0, Opts());
  CHECK(ok.ok());
  CHECK(ok.slots.text == "8/8 cpus");
  PreflightRow over = EvaluateProbe(Host("c1", 16, 4), "", kGoodProbe, 0, 0, Opts());
  CHECK(over.slots.text == "16/8 cpus");
  CHECK(over.problems == std::vector<std::string>{"c1: slots=16 (hostfile line 4) but the host has 8 CPUs"});
}

TEST_CASE("ProbeScript: nvidia-smi's GPUs, one gpu= line each, and their count", "[process]") {
  testing::TempDir tmp("dsl-test-smi-ok");
  // Answers only the query the probe is meant to make.
  FakeNvidiaSmi(tmp,
                "[ \"$*\" = '--query-gpu=index,name,memory.total --format=csv,noheader,nounits' ] || "
                "{ echo \"unexpected arguments: $*\"; exit 2; }\n"
                "echo '0, NVIDIA H100 80GB HBM3, 81559'\n"
                "echo '1, NVIDIA H100 80GB HBM3, 81559'\n");
  std::string out = RunProbeScript(tmp);
  INFO(out);
  CHECK(LinesStartingWith(out, "gpu") == std::vector<std::string>{"gpu=0,NVIDIA H100 80GB HBM3,81559",
                                                                  "gpu=1,NVIDIA H100 80GB HBM3,81559", "gpus=2"});
  PreflightRow r = EvaluateProbe(Host("n", 2, 1), "", out + "time=1\n", 0, 0, Opts());
  CHECK(r.ok());
  CHECK(r.slots.text == "2/2 gpus (H100 80GB HBM3)");
}

TEST_CASE("ProbeScript: a failing nvidia-smi gives gpuerr= with its first line, and the /proc count", "[process]") {
  testing::TempDir tmp("dsl-test-smi-fail");
  const std::string proc_gpus = ProcGpusLine();
  // The message on stderr after an empty line, as a broken driver's may come.
  FakeNvidiaSmi(tmp, "echo >&2\necho \"" + std::string(kSmiFailure) + "\" >&2\necho 'second line' >&2\nexit 9\n");
  std::string out = RunProbeScript(tmp);
  INFO(out);
  CHECK(LinesStartingWith(out, "gpu") == std::vector<std::string>{"gpuerr=" + std::string(kSmiFailure), proc_gpus});
  PreflightRow r = EvaluateProbe(Host("n", 2, 1), "", out + "time=1\n", 0, 0, Opts());
  CHECK(r.problems == std::vector<std::string>{"n: nvidia-smi failed: " + std::string(kSmiFailure)});

  // Nothing said at all: the exit status stands in for the message.
  FakeNvidiaSmi(tmp, "exit 6\n");
  out = RunProbeScript(tmp);
  CHECK(LinesStartingWith(out, "gpu") == std::vector<std::string>{"gpuerr=exit status 6", proc_gpus});
}

TEST_CASE("ProbeScript: without nvidia-smi the /proc count alone", "[process]") {
  testing::TempDir tmp("dsl-test-smi-none");
  std::filesystem::create_directories(tmp / "bin");
  FILE* p = popen("command -v nvidia-smi", "r");
  REQUIRE(p != nullptr);
  char c;
  const bool installed = fread(&c, 1, 1, p) == 1;
  pclose(p);
  if (installed) {
    WARN("nvidia-smi is installed here: the case without it cannot be run");
    return;
  }
  std::string out = RunProbeScript(tmp);
  INFO(out);
  CHECK(LinesStartingWith(out, "gpu") == std::vector<std::string>{ProcGpusLine()});
}

TEST_CASE("FormatPreflightTable: aligned columns, problems, a count", "[unit]") {
  std::vector<PreflightRow> rows;
  rows.push_back(EvaluateProbe(Host("w1", 4, 2), "10.0.0.2", kGoodProbe, 0.01, 0.001, Opts()));
  rows.push_back(UnreachableRow(Host("w2", 4, 3), Status::Unavailable("w2: connection refused")));
  CHECK(FormatPreflightTable(rows) ==
        "HOST  SSH               AGENT  WORKDIR  SLOTS     IFACE->MASTER  PORT  CLOCK\n"
        "w1    10.0.0.2          0.1.0  ok       4/8 cpus  eth1 10.0.0.2  free  +0.010s\n"
        "w2    FAIL unreachable  -      -        -         -              -     -\n"
        "  w2: connection refused\n"
        "1 of 2 hosts ready\n");
}

TEST_CASE("JobChecksFor: a Python command's script, and torch when the script imports it", "[unit]") {
  PreflightOptions o;
  JobChecksFor({"python3", "-u", "train.py", "--lr", "1"}, "import os\nimport torch.distributed as dist\n", o);
  CHECK(o.job_command[0] == "python3");
  CHECK(o.job_script == "train.py");
  CHECK(o.import_module == "torch");
  JobChecksFor({"/venv/bin/python3", "-u", "train.py"}, "print(1)\n", o);
  CHECK(o.job_script == "train.py");
  CHECK(o.import_module.empty());
  JobChecksFor({"python3", "-u", "-m", "pkg.train"}, "", o);
  CHECK(o.job_script.empty());
  JobChecksFor({"./run.sh", "x.py"}, "import torch", o);
  CHECK(o.job_script.empty());  // not a Python interpreter: only the program is checked
  CHECK(o.import_module.empty());
}

TEST_CASE("EvaluateProbe: the job's program, script and torch on the node, word for word", "[unit]") {
  PreflightOptions o = Opts();
  JobChecksFor({"python3", "-u", "train.py"}, "import torch\n", o);
  const std::string base = kGoodProbe;
  PreflightRow ok = EvaluateProbe(Host("w1", 4, 2), "", base + "prog=ok\nscript=ok\nmod=ok\n", 0, 0, o);
  CHECK(ok.ok());
  CHECK(ok.job.text == "ok");
  PreflightRow prog = EvaluateProbe(Host("w1", 4, 2), "", base + "prog=missing\n", 0, 0, o);
  CHECK(prog.problems == std::vector<std::string>{
                             "w1: python3 is not on the PATH a non-interactive ssh login gets (PYTHON_EXEC names the "
                             "interpreter to use, by its path)"});
  CHECK(prog.job.text == "no python3");
  PreflightRow script = EvaluateProbe(Host("w1", 4, 2), "", base + "prog=ok\nscript=missing\n", 0, 0, o);
  CHECK(script.problems ==
        std::vector<std::string>{"w1: train.py is not in /work: every node needs the script at the same path"});
  PreflightRow mod = EvaluateProbe(Host("w1", 4, 2), "",
                                   base + "prog=ok\nscript=ok\nmod=ModuleNotFoundError: No module named 'torch'\n", 0, 0, o);
  CHECK(mod.problems == std::vector<std::string>{
                            "w1: python3 cannot import torch: ModuleNotFoundError: No module named 'torch'"});
  CHECK(FormatPreflightTable({ok, mod}) ==
        "HOST  SSH  AGENT  WORKDIR  JOB            SLOTS     IFACE->MASTER  PORT  CLOCK\n"
        "w1    ok   0.1.0  ok       ok             4/8 cpus  eth1 10.0.0.2  free  +0.000s\n"
        "w1    ok   0.1.0  ok       FAIL no torch  4/8 cpus  eth1 10.0.0.2  free  +0.000s\n"
        "  w1: python3 cannot import torch: ModuleNotFoundError: No module named 'torch'\n"
        "1 of 2 hosts ready\n");
  PreflightOptions tool = Opts();
  JobChecksFor({"./run.sh"}, "", tool);
  CHECK(EvaluateProbe(Host("w1", 4, 2), "", base + "prog=missing\n", 0, 0, tool).problems ==
        std::vector<std::string>{"w1: ./run.sh is not an executable file"});
}

TEST_CASE("ProbeScript: the job's checks run from the working directory, with the node's interpreter", "[process]") {
  testing::TempDir tmp("dsl-test-probe-job");
  std::filesystem::create_directories(tmp / "bin");
  std::filesystem::create_directories(tmp / "wd");
  testing::WriteFile(tmp / "wd/train.py", "import torch\n");
  // A stand-in python3 whose torch is missing.
  testing::WriteFile(tmp / "bin/python3",
                     "#!/bin/sh\n[ \"$1\" = -c ] && [ \"$2\" = 'import torch' ] || exit 2\n"
                     "echo 'Traceback (most recent call last):' >&2\n"
                     "echo \"ModuleNotFoundError: No module named 'torch'\" >&2\nexit 1\n");
  std::filesystem::permissions(tmp / "bin/python3", std::filesystem::perms::owner_all);
  auto run = [&](const PreflightOptions& o) {
    testing::WriteFile(tmp / "probe.sh", ProbeScript(o, "", false));
    const std::string cmd = "PATH=" + ShellQuote(tmp / "bin") + ":/usr/bin:/bin sh " + ShellQuote(tmp / "probe.sh");
    FILE* p = popen(cmd.c_str(), "r");
    REQUIRE(p != nullptr);
    std::string out;
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
    pclose(p);
    return out;
  };
  PreflightOptions o = Opts();
  o.working_dir = tmp / "wd";
  JobChecksFor({"python3", "-u", "train.py"}, "import torch\n", o);
  std::string out = run(o);
  INFO(out);
  CHECK(LinesStartingWith(out, "prog=") == std::vector<std::string>{"prog=ok"});
  CHECK(LinesStartingWith(out, "script=") == std::vector<std::string>{"script=ok"});
  CHECK(LinesStartingWith(out, "mod=") == std::vector<std::string>{"mod=ModuleNotFoundError: No module named 'torch'"});
  // An import that warns on stderr but succeeds is fine.
  testing::WriteFile(tmp / "bin/python3.11", "#!/bin/sh\necho 'UserWarning: something' >&2\nexit 0\n");
  std::filesystem::permissions(tmp / "bin/python3.11", std::filesystem::perms::owner_all);
  JobChecksFor({"python3.11", "train.py"}, "import torch\n", o);
  CHECK(LinesStartingWith(run(o), "mod=") == std::vector<std::string>{"mod=ok"});
  JobChecksFor({"python3", "-u", "other.py"}, "", o);
  CHECK(LinesStartingWith(run(o), "script=") == std::vector<std::string>{"script=missing"});
  JobChecksFor({"no-such-program-here"}, "", o);
  CHECK(LinesStartingWith(run(o), "prog=") == std::vector<std::string>{"prog=missing"});
}

}  // namespace ds
