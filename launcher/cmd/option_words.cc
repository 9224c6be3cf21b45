#include "launcher/cmd/option_words.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/strings.h"

namespace ds::cli {
namespace {

// The options whose long names match `name`: the one that has it exactly,
// else every one with a long name starting with it. `shown` gets, per
// option, the name to write ("--nproc_per_node" for "--nproc").
std::vector<const CLI::Option*> LongMatches(const CLI::App& app, const std::string& name,
                                            std::vector<std::string>& shown) {
  std::vector<const CLI::Option*> found;
  for (const CLI::Option* opt : app.get_options()) {
    const auto& names = opt->get_lnames();
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      shown = {"--" + name};
      return {opt};
    }
  }
  for (const CLI::Option* opt : app.get_options()) {
    for (const std::string& l : opt->get_lnames()) {
      if (!StartsWith(l, name)) continue;
      found.push_back(opt);
      shown.push_back("--" + l);
      break;
    }
  }
  return found;
}

const CLI::Option* ShortOption(const CLI::App& app, char c) {
  for (const CLI::Option* opt : app.get_options()) {
    const auto& names = opt->get_snames();
    if (std::find(names.begin(), names.end(), std::string(1, c)) != names.end()) return opt;
  }
  return nullptr;
}

bool IsLongName(const CLI::App& app, const std::string& name) {
  for (const CLI::Option* opt : app.get_options()) {
    const auto& names = opt->get_lnames();
    if (std::find(names.begin(), names.end(), name) != names.end()) return true;
  }
  return false;
}

std::vector<std::string> EveryName(const CLI::App& app) {
  std::vector<std::string> out;
  for (const CLI::Option* opt : app.get_options()) {
    for (const std::string& l : opt->get_lnames()) out.push_back("--" + l);
    for (const std::string& s : opt->get_snames()) out.push_back("-" + s);
  }
  return out;
}

std::string Unknown(const CLI::App& app, const std::string& typed, const std::string& help_hint) {
  const std::string near = typed.size() > 2 ? DidYouMean(typed, EveryName(app)) : "";  // not for one letter
  return fmt::format("unknown option '{}'{} (see {})", Printable(typed),
                     near.empty() ? "" : " (did you mean " + near + "?)", help_hint);
}

// One option word at args[i]: appends it (and its value) to `out`, written
// out in full; returns the number of words it took.
Result<size_t> TakeOption(const std::vector<std::string>& args, size_t i, const CLI::App& app,
                          const std::string& help_hint, OptionWords& out) {
  const std::string& word = args[i];
  const size_t eq = word.find('=');
  const std::string typed = word.substr(0, eq);
  const CLI::Option* opt = nullptr;
  std::string name;
  if (word[1] == '-') {
    std::vector<std::string> shown;
    std::vector<const CLI::Option*> found = LongMatches(app, typed.substr(2), shown);
    if (found.empty()) return Status::InvalidArgument(Unknown(app, typed, help_hint));
    if (found.size() > 1) {
      const std::string last = shown.back();
      shown.pop_back();
      return Status::InvalidArgument(fmt::format("'{}' could be {} or {}: write more of it (see {})",
                                                 Printable(typed), fmt::join(shown, ", "), last, help_hint));
    }
    opt = found[0];
    name = shown[0];
  } else {
    if (typed.size() > 2 && IsLongName(app, typed.substr(1)))
      return Status::InvalidArgument(fmt::format("'{}': a long option takes two dashes: -{} (see {})",
                                                 Printable(word), typed, help_hint));
    opt = ShortOption(app, word[1]);
    if (opt == nullptr) return Status::InvalidArgument(Unknown(app, typed.substr(0, 2), help_hint));
    name = typed.substr(0, 2);
  }
  out.options.push_back({word[1] == '-' ? typed : name, name});
  const bool attached = word[1] == '-' ? eq != std::string::npos : word.size() > 2;
  out.args.push_back(word[1] == '-' ? name + (attached ? word.substr(eq) : "") : word);
  if (opt->get_expected_max() == 0 || attached) return size_t{1};  // a flag, or --opt=value
  if (i + 1 >= args.size())
    return Status::InvalidArgument(fmt::format("{}: expected a value ({}) after it (see {})", Printable(typed),
                                               opt->get_type_name(), help_hint));
  out.args.push_back(args[i + 1]);
  return size_t{2};
}

}  // namespace

Result<OptionWords> ResolveOptionWords(const std::vector<std::string>& args, const CLI::App& app,
                                       const std::string& help_hint) {
  OptionWords out;
  size_t i = 0;
  while (i < args.size()) {
    const std::string& w = args[i];
    if (w == "--" || w.size() < 2 || w[0] != '-') break;  // the job's command starts here
    DS_ASSIGN_OR_RETURN(size_t taken, TakeOption(args, i, app, help_hint, out));
    i += taken;
  }
  out.args.insert(out.args.end(), args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  return out;
}

std::string Spelled(const std::vector<TypedOption>& options, const std::vector<std::string>& names) {
  std::string found = names.front();
  for (const TypedOption& o : options)
    if (std::find(names.begin(), names.end(), o.name) != names.end()) found = o.typed;
  return found;
}

}  // namespace ds::cli
