// torchrun's --rdzv-conf KEY=VALUE,... for the per-node form's join
// (launcher/join/per_node_launch.h, docs/per-node.md "Ranks given at join"): the
// keys dslaunch acts on, with torchrun's defaults (its c10d rendezvous:
// join_timeout 600 s, last_call_timeout 30 s; is_host decides from the
// endpoint). Other torchrun keys (close_timeout, read_timeout,
// keep_alive_interval, ...) are accepted and listed as ignored. Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace ds {

struct RendezvousConf {
  double join_timeout = 600.0;     // join_timeout: seconds for --nnodes N (or MIN) nodes to join
  double last_call_timeout = 30.0; // last_call_timeout: --nnodes MIN:MAX waits this long after MIN
                                   //   joined for more, unless MAX joined first
  std::optional<bool> is_host;     // is_host: this node hosts the rendezvous (true) or joins it (false);
                                   //   unset = it hosts when it can bind the endpoint
  std::vector<std::string> ignored;  // keys given that dslaunch does not act on, as typed
};

// Parses `text` ("join_timeout=60,last_call_timeout=5s"; durations in
// seconds, or with s/ms/m). `flag` is the option as typed. Errors name the
// flag, the key=value pair as typed and what was expected.
Result<RendezvousConf> ParseRendezvousConf(const std::string& flag, const std::string& text);

}  // namespace ds
