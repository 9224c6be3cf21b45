#include "launcher/cmd/preflight_checks.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "common/strings.h"

namespace ds {
namespace {

std::map<std::string, std::string> ParseProbe(const std::string& out) {
  std::map<std::string, std::string> kv;
  for (const auto& line : Split(out, '\n')) {
    auto eq = line.find('=');
    if (eq != std::string::npos) kv[line.substr(0, eq)] = std::string(Trim(line.substr(eq + 1)));
  }
  return kv;
}

// Every value of a key the probe repeats (one `gpu=` line per GPU), in order;
// ParseProbe keeps only the last.
std::vector<std::string> ProbeValues(const std::string& out, const std::string& key) {
  std::vector<std::string> values;
  for (const auto& line : Split(out, '\n'))
    if (StartsWith(line, key + "=")) values.emplace_back(Trim(line.substr(key.size() + 1)));
  return values;
}

// "10.77.0.11 dev eth0 src 10.77.0.12 uid 0" -> value after `key`.
std::string RouteField(const std::string& route, const std::string& key) {
  auto words = Split(route, ' ');
  for (size_t i = 0; i + 1 < words.size(); ++i)
    if (words[i] == key) return words[i + 1];
  return "";
}

}  // namespace

std::string ProbeScript(const PreflightOptions& o, const std::string& master_addr, bool is_first) {
  std::string s;
  s += "a=" + ShellQuote(o.agent_path) +
       "; if [ -x \"$a\" ]; then echo \"agent=ok $(\"$a\" --version 2>&1 | head -n1)\"; "
       "elif [ -e \"$a\" ]; then echo agent=notexec; else echo agent=missing; fi\n";
  s += "wd=" + ShellQuote(o.working_dir) +
       "; if [ -z \"$wd\" ]; then echo wd=skip; elif [ -d \"$wd\" ]; then echo wd=ok; else echo wd=missing; fi\n";
  s += "echo \"cpus=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)\"\n";
  // GPUs: the driver's count in /proc, or nvidia-smi's list when it is on
  // PATH (bounded by `timeout` where there is one): `gpu=<index>,<name>,<MiB>`
  // per GPU. When nvidia-smi fails, its first line as `gpuerr=` and the /proc
  // count. Two branches rather than "$t nvidia-smi": a login shell such as zsh
  // does not split an unquoted variable.
  const std::string smi = "nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader,nounits 2>&1";
  s += "g=0; if [ -d /proc/driver/nvidia/gpus ]; then g=$(ls /proc/driver/nvidia/gpus | wc -l); fi\n";
  s += "if command -v nvidia-smi >/dev/null 2>&1; then\n"
       "  if command -v timeout >/dev/null 2>&1; then q=$(timeout 10 " + smi + "); else q=$(" + smi + "); fi; rc=$?\n"
       "  if [ \"$rc\" -eq 0 ]; then\n"
       "    l=$(printf '%s\\n' \"$q\" | sed -n 's/ *, */,/g; s/^[0-9][0-9]*,/gpu=&/p')\n"
       "    if [ -n \"$l\" ]; then printf '%s\\n' \"$l\"; fi; g=$(printf '%s\\n' \"$l\" | grep -c '^gpu=')\n"
       "  else\n"
       "    e=$(printf '%s\\n' \"$q\" | awk 'NF { print; exit }'); if [ \"$rc\" -eq 124 ]; then e=\"no answer within 10s\"; fi\n"
       "    echo \"gpuerr=${e:-exit status $rc}\"\n"
       "  fi\n"
       "fi\n"
       "echo \"gpus=$g\"\n";
  if (!master_addr.empty()) {
    std::string m = ShellQuote(master_addr);
    s += "echo \"own=$(ip -o addr show to " + m + " 2>/dev/null | head -n1 | awk '{print $2}')\"\n";
    s += "echo \"route=$(ip -o route get " + m + " 2>&1 | head -n1)\"\n";
  }
  if (!o.job_command.empty()) {  // from the working directory, as the workers start
    s += "p=" + ShellQuote(o.job_command[0]) + "; s=" + ShellQuote(o.job_script) + "; m=" + ShellQuote(o.import_module) +
         "\n(if [ -n \"$wd\" ] && [ -d \"$wd\" ]; then cd \"$wd\"; fi\n"
         " case $p in */*) if [ -f \"$p\" ] && [ -x \"$p\" ]; then f=1; else f=; fi;;\n"
         "   *) if command -v \"$p\" >/dev/null 2>&1; then f=1; else f=; fi;; esac\n"
         " if [ -n \"$f\" ]; then echo prog=ok; else echo prog=missing; fi\n"
         " if [ -n \"$s\" ]; then if [ -f \"$s\" ]; then echo script=ok; else echo script=missing; fi; fi\n"
         " if [ -n \"$m\" ] && [ -n \"$f\" ]; then e=$(\"$p\" -c \"import $m\" 2>&1); rc=$?\n"
         "   if [ $rc -eq 0 ]; then echo mod=ok; else echo \"mod=$(printf '%s\\n' \"$e\" | awk 'NF { l = $0 } END { print l }')\"; fi; fi)\n";
  }
  if (is_first && o.master_port > 0)
    s += "if command -v ss >/dev/null 2>&1; then if ss -Hltn \"sport = :" + std::to_string(o.master_port) +
         "\" 2>/dev/null | grep -q .; then echo port=busy; else echo port=free; fi; else echo port=unknown; fi\n";
  return s;
}

namespace {

// Marks `cell` failed with `text` and records `problem` for `r`'s host.
void Fail(PreflightRow& r, PreflightCell& cell, const std::string& text, const std::string& problem) {
  cell = {false, text};
  r.problems.push_back(r.host + ": " + problem);
}

void CheckAgent(PreflightRow& r, const std::string& agent, const PreflightOptions& o) {
  if (o.ship_agent) {
    r.agent = {true, "shipped"};
  } else if (StartsWith(agent, "ok")) {
    std::string version(Trim(agent.substr(2)));
    if (version.find(o.local_version) == std::string::npos)
      Fail(r, r.agent, "version?", "dsagent at " + o.agent_path + " reports '" + version + "', expected version " +
                                       o.local_version + " (the launcher's)");
    else
      r.agent = {true, o.local_version};
  } else if (agent == "notexec") {
    Fail(r, r.agent, "not exec", o.agent_path + " is not executable (use --ship-agent to copy dsagent there)");
  } else {
    Fail(r, r.agent, "missing",
         "no dsagent at " + o.agent_path + " (install it there, set --agent-path, or use --ship-agent)");
  }
}

// The model of a host's GPUs from its `gpu=` values ("0,NVIDIA H100 80GB
// HBM3,81559"): "H100 80GB HBM3" when all share it, "mixed" when they do not,
// "" without any.
std::string GpuModel(const std::vector<std::string>& gpus) {
  std::string model;
  for (const auto& g : gpus) {
    const size_t first = g.find(','), last = g.rfind(',');
    std::string name = first != std::string::npos && last > first ? g.substr(first + 1, last - first - 1) : "";
    if (StartsWith(name, "NVIDIA ")) name = name.substr(7);
    if (!model.empty() && name != model) return "mixed";
    model = name;
  }
  return model;
}

// nvidia-smi's words where the driver is loaded on a node without an NVIDIA
// GPU (a CPU node built from a GPU image): not a failure when the driver's own
// count agrees that there is none.
bool NoGpuOnThisNode(const std::string& gpuerr, int64_t driver_gpus) {
  return driver_gpus == 0 && gpuerr.find("No devices were found") != std::string::npos;
}

// Slots against the host's GPUs (with their model), or its CPUs when it has
// none. A failing nvidia-smi fails the cell: the job would not find its GPUs.
void CheckSlots(PreflightRow& r, const HostEntry& host, std::map<std::string, std::string>& kv,
                const std::vector<std::string>& gpu_lines) {
  if (!kv["gpuerr"].empty() && !NoGpuOnThisNode(kv["gpuerr"], ParseInt(kv["gpus"]).value_or(-1))) {
    Fail(r, r.slots, "nvidia-smi", "nvidia-smi failed: " + kv["gpuerr"]);
    return;
  }
  auto cpus = ParseInt(kv["cpus"]).value_or(0), gpus = ParseInt(kv["gpus"]).value_or(0);
  std::string what = gpus > 0 ? "gpus" : "cpus";
  int64_t have = gpus > 0 ? gpus : cpus;
  std::string text = fmt::format("{}/{} {}", host.slots, have, what);
  const std::string model = GpuModel(gpu_lines);
  if (gpus > 0 && !model.empty()) text += " (" + model + ")";
  if (have <= 0) Fail(r, r.slots, "?", "cannot count CPUs or GPUs");
  else if (host.slots > have)
    Fail(r, r.slots, text, fmt::format("slots={} (hostfile line {}) but the host has {} {}", host.slots, host.line,
                                       have, gpus > 0 ? "GPUs" : "CPUs"));
  else r.slots = {true, text};
}

void CheckInterface(PreflightRow& r, std::map<std::string, std::string>& kv) {
  if (!kv["own"].empty()) {
    r.iface = {true, kv["own"] + " (master)"};
  } else if (kv.count("route")) {
    std::string dev = RouteField(kv["route"], "dev"), src = RouteField(kv["route"], "src");
    if (dev.empty()) Fail(r, r.iface, "no route", "no route to the master: " + kv["route"]);
    else r.iface = {true, dev + " " + src};
  } else {
    r.iface = {true, "-"};
  }
}

void CheckJob(PreflightRow& r, std::map<std::string, std::string>& kv, const PreflightOptions& o) {
  if (o.job_command.empty()) return;
  const std::string& prog = o.job_command[0];
  const bool python = std::filesystem::path(prog).filename().string().rfind("python", 0) == 0;
  if (kv["prog"] != "ok") {
    Fail(r, r.job, "no " + std::filesystem::path(prog).filename().string(),
         prog + (prog.find('/') != std::string::npos ? " is not an executable file"
                                                     : " is not on the PATH a non-interactive ssh login gets") +
             (python ? " (PYTHON_EXEC names the interpreter to use, by its path)" : ""));
  } else if (!o.job_script.empty() && kv["script"] != "ok") {
    Fail(r, r.job, "no " + o.job_script,
         fmt::format("{} is not in {}: every node needs the script at the same path", o.job_script,
                     o.working_dir.empty() ? "the working directory" : o.working_dir));
  } else if (!o.import_module.empty() && kv["mod"] != "ok") {
    Fail(r, r.job, "no " + o.import_module,
         fmt::format("{} cannot import {}: {}", prog, o.import_module, kv["mod"].empty() ? "no answer" : kv["mod"]));
  } else {
    r.job = {true, "ok"};
  }
}

void CheckClock(PreflightRow& r, const std::string& time, double skew, double rtt, const PreflightOptions& o) {
  if (time.empty() || !std::isfinite(skew)) {
    Fail(r, r.clock, "?", "cannot read the clock");
  } else {
    std::string t = fmt::format("{:+.3f}s", skew);
    if (std::fabs(skew) > o.max_clock_skew + rtt)
      Fail(r, r.clock, t, fmt::format("clock skew {} exceeds {}s (run NTP/chrony on the nodes)", t, o.max_clock_skew));
    else r.clock = {true, t};
  }
}

}  // namespace

void JobChecksFor(const std::vector<std::string>& command, const std::string& script_text, PreflightOptions& o) {
  o.job_command = command;
  o.job_script.clear();
  o.import_module.clear();
  if (command.empty() || std::filesystem::path(command[0]).filename().string().rfind("python", 0) != 0) return;
  for (size_t i = 1; i < command.size(); ++i) {
    if (command[i] == "-m" || command[i] == "-c") return;  // a module or inline code: no script file
    if (command[i].size() > 3 && command[i].compare(command[i].size() - 3, 3, ".py") == 0) {
      o.job_script = command[i];
      break;
    }
  }
  if (script_text.find("import torch") != std::string::npos || script_text.find("from torch") != std::string::npos)
    o.import_module = "torch";
}

PreflightRow EvaluateProbe(const HostEntry& host, const std::string& peer, const std::string& out, double skew,
                       double rtt, const PreflightOptions& o) {
  PreflightRow r;
  r.host = host.name;
  r.ssh = {true, peer.empty() ? "ok" : peer};
  auto kv = ParseProbe(out);
  CheckAgent(r, kv["agent"], o);
  const std::string wd = kv["wd"];
  if (wd == "ok" || wd == "skip") r.workdir = {true, wd == "ok" ? "ok" : "-"};
  else Fail(r, r.workdir, "missing", "working directory " + o.working_dir + " does not exist");
  CheckJob(r, kv, o);
  CheckSlots(r, host, kv, ProbeValues(out, "gpu"));
  CheckInterface(r, kv);
  const std::string port = kv["port"];
  if (port == "busy") Fail(r, r.port, "busy", fmt::format("master port {} is already in use", o.master_port));
  else r.port = {true, port.empty() ? "-" : port};
  CheckClock(r, kv["time"], skew, rtt, o);
  return r;
}

PreflightRow UnreachableRow(const HostEntry& host, const Status& error) {
  PreflightRow r;
  r.host = host.name;
  r.ssh = {false, "unreachable"};
  for (PreflightCell* c : {&r.agent, &r.workdir, &r.job, &r.slots, &r.iface, &r.port, &r.clock}) *c = {true, "-"};
  std::string msg = error.message();
  if (!StartsWith(msg, host.name + ": ")) msg = host.name + ": " + msg;
  r.problems.push_back(msg);
  return r;
}

std::string FormatPreflightTable(const std::vector<PreflightRow>& rows) {
  // The JOB column only when a job was checked (a row with a verdict there).
  const bool job = std::any_of(rows.begin(), rows.end(), [](const PreflightRow& r) { return r.job.text != "" && r.job.text != "-"; });
  std::vector<std::string> head = {"HOST", "SSH", "AGENT", "WORKDIR", "SLOTS", "IFACE->MASTER", "PORT", "CLOCK"};
  if (job) head.insert(head.begin() + 4, "JOB");
  std::vector<std::vector<std::string>> cells;
  for (const auto& r : rows) {
    std::vector<std::string> line = {r.host};
    for (const PreflightCell* c : {&r.ssh, &r.agent, &r.workdir, &r.job, &r.slots, &r.iface, &r.port, &r.clock}) {
      if (c == &r.job && !job) continue;
      line.push_back(c->ok ? c->text : "FAIL " + c->text);
    }
    cells.push_back(line);
  }
  std::vector<size_t> w(head.size());
  for (size_t i = 0; i < head.size(); ++i) {
    w[i] = head[i].size();
    for (const auto& l : cells) w[i] = std::max(w[i], l[i].size());
  }
  auto fmt_line = [&](const std::vector<std::string>& l) {
    std::string s;
    for (size_t i = 0; i < l.size(); ++i) s += i + 1 < l.size() ? fmt::format("{:<{}}  ", l[i], w[i]) : l[i];
    return s + "\n";
  };
  std::string out = fmt_line(head);
  for (const auto& l : cells) out += fmt_line(l);
  size_t ready = 0;
  for (const auto& r : rows) ready += r.ok();
  for (const auto& r : rows)
    for (const auto& p : r.problems) out += "  " + p + "\n";
  out += fmt::format("{} of {} hosts ready\n", ready, rows.size());
  return out;
}

}  // namespace ds
