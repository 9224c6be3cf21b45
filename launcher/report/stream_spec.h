// torchrun's -r/--redirects and -t/--tee value: which of a worker's streams
// a setting applies to, for every local rank ("3") or per local rank
// ("0:1,1:2"): 0 none, 1 stdout, 2 stderr, 3 both (a bit per stream, as in
// torch.distributed.elastic's Std). Pure values.
#pragma once

#include <map>
#include <string>

#include "common/status.h"

namespace ds {

struct StreamSpec {
  int all = 0;                       // local ranks the map does not name
  std::map<int, int> by_local_rank;  // "0:1,1:2"
  // The streams (bits: 1 stdout, 2 stderr) for `local_rank`; -1 = unknown:
  // `all`.
  int For(int local_rank) const;
  bool any() const;
};

// Parses "N" or "L:N,L:N" (N in 0-3, L a local rank). InvalidArgument names
// `flag` as typed and what was expected.
Result<StreamSpec> ParseStreamSpec(const std::string& flag, const std::string& text);

}  // namespace ds
