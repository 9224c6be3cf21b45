#include "launcher/config/selection.h"

#include <algorithm>
#include <map>
#include <set>

#include "common/strings.h"

namespace ds {
namespace {

// One parsed filter: host -> the slots named (empty set = all of the host).
using Filter = std::map<std::string, std::set<int>>;

std::string HostList(const Hostfile& hf) {
  std::string out;
  for (const auto& h : hf.hosts) out += (out.empty() ? "" : ", ") + h.name;
  return out;
}

const HostEntry* FindHost(const Hostfile& hf, const std::string& name) {
  for (const auto& h : hf.hosts)
    if (h.name == name) return &h;
  return nullptr;
}

// One '@'-separated part of a filter: the host and, after ':', its slots.
struct FilterPart {
  std::string name;
  bool has_slots = false;
  std::string slots_text;  // "0,2"
};

// Splits "w0:0,2", "w0", "[fe80::1]:0,1" or "[fe80::1]". `spec` and `flag`
// name the whole option in messages.
Result<FilterPart> SplitFilterPart(const std::string& part, const std::string& spec, const std::string& flag) {
  FilterPart fp;
  if (part[0] != '[') {
    size_t colon = part.find(':');
    fp.name = part.substr(0, colon);
    if (colon != std::string::npos) {
      fp.has_slots = true;
      fp.slots_text = part.substr(colon + 1);
    }
    return fp;
  }
  size_t close = part.find(']');
  if (close == std::string::npos)
    return Status::InvalidArgument(flag + " '" + spec + "': missing ']' in '" + part + "'");
  fp.name = part.substr(1, close - 1);
  std::string rest = part.substr(close + 1);
  if (!rest.empty()) {
    if (rest[0] != ':')
      return Status::InvalidArgument(flag + " '" + spec + "': expected ':' after '" + part.substr(0, close + 1) +
                                     "', got '" + rest + "'");
    fp.has_slots = true;
    fp.slots_text = rest.substr(1);
  }
  return fp;
}

Status UnknownHost(const Hostfile& hf, const std::string& name, const std::string& flag) {
  std::vector<std::string> names;
  for (const auto& h : hf.hosts) names.push_back(h.name);
  std::string msg = flag + ": unknown host '" + name + "'";
  msg += DidYouMeanHint(name, names);
  return Status::InvalidArgument(msg + "; hosts in " + (hf.path.empty() ? std::string("the local hostfile") : hf.path) +
                                 ": " + HostList(hf));
}

// Parses DeepSpeed's "w0:0,2@w1" against the hostfile. `flag` names the
// option in messages ("--include").
Result<Filter> ParseFilter(const std::string& spec, const Hostfile& hf, const std::string& flag) {
  Filter out;
  for (const std::string& part : Split(spec, '@')) {
    if (part.empty())
      return Status::InvalidArgument(flag + " '" + spec + "': empty host between '@' separators");
    DS_ASSIGN_OR_RETURN(FilterPart fp, SplitFilterPart(part, spec, flag));
    const std::string& name = fp.name;
    const HostEntry* host = FindHost(hf, name);
    if (host == nullptr) return UnknownHost(hf, name, flag);
    std::set<int>& slots = out[name];
    if (!fp.has_slots) {
      slots.clear();
      slots.insert(-1);  // marker: the whole host (wins over any slot list)
      continue;
    }
    if (fp.slots_text.empty())
      return Status::InvalidArgument(flag + " '" + spec + "': expected slot numbers after '" + name + ":'");
    for (const std::string& s : Split(fp.slots_text, ',')) {
      auto n = ParseInt(s);
      if (!n)
        return Status::InvalidArgument(flag + " '" + spec + "': expected a slot number, got '" + s + "'");
      if (*n < 0 || *n >= host->slots)
        return Status::InvalidArgument(flag + ": host '" + name + "' has " + std::to_string(host->slots) +
                                       " slots (0-" + std::to_string(host->slots - 1) + "), got slot " + s);
      if (!slots.count(-1)) slots.insert(static_cast<int>(*n));
    }
  }
  return out;
}

std::vector<int> AllSlots(const HostEntry& h) {
  std::vector<int> v(h.slots);
  for (int i = 0; i < h.slots; ++i) v[i] = i;
  return v;
}

}  // namespace

Result<std::vector<SelectedHost>> SelectHosts(const Hostfile& hostfile, const SelectionOptions& opts) {
  if (!opts.include.empty() && !opts.exclude.empty())
    return Status::InvalidArgument(opts.include_flag + " and " + opts.exclude_flag +
                                   " cannot be used together; use one of them");

  std::vector<SelectedHost> selected;
  if (!opts.include.empty()) {
    DS_ASSIGN_OR_RETURN(Filter inc, ParseFilter(opts.include, hostfile, opts.include_flag));
    for (const auto& h : hostfile.hosts) {  // hostfile order, not --include order
      auto it = inc.find(h.name);
      if (it == inc.end()) continue;
      std::vector<int> slots = it->second.count(-1) ? AllSlots(h)
                                                    : std::vector<int>(it->second.begin(), it->second.end());
      selected.push_back({h, std::move(slots)});
    }
  } else {
    Filter exc;
    if (!opts.exclude.empty()) {
      DS_ASSIGN_OR_RETURN(exc, ParseFilter(opts.exclude, hostfile, opts.exclude_flag));
    }
    for (const auto& h : hostfile.hosts) {
      auto it = exc.find(h.name);
      std::vector<int> slots;
      for (int s : AllSlots(h))
        if (it == exc.end() || (!it->second.count(-1) && !it->second.count(s))) slots.push_back(s);
      if (!slots.empty()) selected.push_back({h, std::move(slots)});
    }
    if (selected.empty())
      return Status::InvalidArgument(opts.exclude_flag + " '" + opts.exclude + "' leaves no hosts");
  }

  if (opts.num_nodes != -1) {
    if (opts.num_nodes < 1)
      return Status::InvalidArgument(opts.num_nodes_flag + ": expected a positive number, got " +
                                     std::to_string(opts.num_nodes));
    if (opts.num_nodes > static_cast<int>(selected.size()))
      return Status::InvalidArgument(opts.num_nodes_flag + " " + std::to_string(opts.num_nodes) + ": only " +
                                     std::to_string(selected.size()) + " host(s) selected");
    selected.resize(opts.num_nodes);
  }
  if (opts.num_gpus != -1) {
    if (opts.num_gpus < 1)
      return Status::InvalidArgument(opts.num_gpus_flag + ": expected a positive number, got " +
                                     std::to_string(opts.num_gpus));
    for (auto& s : selected) {
      if (opts.num_gpus > static_cast<int>(s.slots.size()))
        return Status::InvalidArgument(opts.num_gpus_flag + " " + std::to_string(opts.num_gpus) + ": host '" +
                                       s.host.name + "' has only " + std::to_string(s.slots.size()) +
                                       " selected slot(s)");
      s.slots.resize(opts.num_gpus);
    }
  }
  return selected;
}

}  // namespace ds
