// What the plan and worker-environment tests start from: hosts selected from
// a hostfile's text, and a job running `python3 -u train.py`.
#pragma once

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "launcher/config/job_spec.h"
#include "launcher/config/selection.h"

namespace ds::testing {

inline std::vector<SelectedHost> Hosts(const std::string& text, const SelectionOptions& sel = {}) {
  auto hf = ParseHostfile(text, "hf");
  REQUIRE(hf.ok());
  auto r = SelectHosts(*hf, sel);
  REQUIRE(r.ok());
  return *r;
}

inline JobSpec Job() {
  JobSpec j;
  j.command = {"python3", "-u", "train.py"};
  return j;
}

// Three hosts of two slots each.
constexpr const char* kThree = "n0 slots=2\nn1 slots=2\nn2 slots=2\n";

}  // namespace ds::testing
