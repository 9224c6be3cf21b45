// The size and TERM of the workers' pseudo-terminals under --pty: as wide as
// the launcher's terminal less the widest "host:rank " prefix LogMux puts
// before each line (so a worker's full-width bar fits on one line), as tall as
// it, with the launcher's TERM. Off a terminal: 80 x 24. Pure, but for
// PtyWindowHere, which asks the launcher's terminal.
#pragma once

#include <optional>
#include <string>

#include "launcher/config/plan.h"

namespace ds {

struct TerminalSize {
  int columns = 0;
  int rows = 0;
};

// `terminal`: the launcher's (nullopt off a terminal); `term`: its TERM.
PtyWindow FitPtyWindow(const LaunchPlan& plan, std::optional<TerminalSize> terminal,
                       const std::optional<std::string>& term);

// FitPtyWindow with the size of whichever of stdout and stderr is a terminal
// (stdout first) and this process's TERM.
PtyWindow PtyWindowHere(const LaunchPlan& plan);

}  // namespace ds
