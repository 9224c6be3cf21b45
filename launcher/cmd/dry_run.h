// FormatDryRun: the text `dslaunch --dry-run` prints: per node its host, node
// rank, ranks, the environment dslaunch will add for its workers, and the
// command; standby hosts last. Values only known at launch (MASTER_PORT when
// not fixed, the store address, the interface, OMP_NUM_THREADS) are shown as
// placeholders; secret-like values are masked. The header says which
// hostfile the hosts came from. The short form (`--dry-run=short`) leaves
// the environment out. Pure function.
#pragma once

#include <string>

#include "launcher/config/worker_env.h"

namespace ds {

struct DryRunOptions {
  std::string launcher = "auto";  // shown in the header line
  KeyValues inherited;              // the environment workers would inherit (decides "user set")
  std::string hostfile_source;    // where plan.hostfile_path came from, e.g. "--hostfile" or
                                  //   "DSLAUNCH_DEFAULT_HOSTFILE" (PlanNotes); "" = not said
  bool short_form = false;        // --dry-run=short: the header, the master, the command once and
                                  //   one line per node, no environment
};

std::string FormatDryRun(const LaunchPlan& plan, const DryRunOptions& opts);

// True for names whose values must not be printed (…TOKEN, …SECRET,
// …PASSWORD, …_KEY, …CREDENTIAL…).
bool IsSecretName(const std::string& name);

}  // namespace ds
