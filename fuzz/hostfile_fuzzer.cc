// libFuzzer target: the hostfile parser, then host selection and the plan on
// whatever parses. Input: hostfile text, optionally followed by a line "---"
// and an --include spec. Must never crash, hang or leak (ASan).
#include <cstddef>
#include <cstdint>
#include <string>

#include "launcher/config/hostfile.h"
#include "launcher/config/worker_env.h"
#include "launcher/config/selection.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  std::string text = input, include;
  size_t sep = input.find("\n---\n");
  if (sep != std::string::npos) {
    text = input.substr(0, sep + 1);
    include = input.substr(sep + 5);
    while (!include.empty() && (include.back() == '\n' || include.back() == '\r')) include.pop_back();
  }
  auto hf = ds::ParseHostfile(text, "fuzz");
  if (!hf.ok()) return 0;
  for (const auto& h : hf->hosts)
    if (h.slots > 64) return 0;  // keep plans small; parsing large counts is covered above
  ds::SelectionOptions opts;
  opts.include = include;
  auto hosts = ds::SelectHosts(*hf, opts);
  if (!hosts.ok()) return 0;
  ds::JobSpec job;
  job.command = {"true"};
  auto plan = ds::MakePlan(*hosts, job, true);
  if (!plan.ok()) return 0;
  ds::GenerationInfo gen;
  for (size_t n = 0; n < plan->nodes.size(); ++n)
    for (int l = 0; l < plan->nodes[n].num_workers(); ++l) ds::WorkerEnv(*plan, static_cast<int>(n), l, gen, {});
  return 0;
}
