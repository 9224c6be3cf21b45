#include "launcher/cmd/pty_window.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>

#include "common/env_registry.h"

namespace ds {
namespace {

constexpr int kMinColumns = 20;  // a prefix wider than the terminal still leaves a usable line

size_t WidestPrefix(const LaunchPlan& plan) {
  size_t host = 1;  // "?" before an agent names its host
  for (const auto* list : {&plan.nodes, &plan.standbys})
    for (const NodePlan& n : *list) host = std::max(host, n.host.name.size());
  const size_t rank_digits = std::to_string(std::max(0, plan.world_size - 1)).size();
  return host + 1 + rank_digits + 1;  // "host:rank "
}

}  // namespace

PtyWindow FitPtyWindow(const LaunchPlan& plan, std::optional<TerminalSize> terminal,
                       const std::optional<std::string>& term) {
  PtyWindow w;
  if (term && !term->empty() && *term != "dumb") w.term = *term;
  if (!terminal || terminal->columns <= 0) return w;
  const int prefix = static_cast<int>(std::min<size_t>(WidestPrefix(plan), 1000));
  w.columns = std::max(kMinColumns, terminal->columns - prefix);
  if (terminal->rows > 0) w.rows = terminal->rows;
  return w;
}

PtyWindow PtyWindowHere(const LaunchPlan& plan) {
  std::optional<TerminalSize> size;
  for (int fd : {STDOUT_FILENO, STDERR_FILENO}) {
    winsize ws{};
    if (::isatty(fd) && ::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
      size = TerminalSize{ws.ws_col, ws.ws_row};
      break;
    }
  }
  return FitPtyWindow(plan, size, GetAnyEnv("TERM"));
}

}  // namespace ds
