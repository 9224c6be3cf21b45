#include "launcher/cmd/subcommand_typo.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "common/strings.h"

namespace ds {

bool NamesProgram(const std::string& word, const std::string& path) {
  if (word.find('/') != std::string::npos) return true;
  struct stat st;
  if (::stat(word.c_str(), &st) == 0) return true;
  for (const std::string& dir : Split(path, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + word;
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0)
      return true;
  }
  return false;
}

Status CheckSubcommandTypo(const std::string& word, const std::vector<std::string>& subcommands,
                           const std::function<bool(const std::string&)>& names_program) {
  if (word.empty() || word[0] == '-') return Status::OK();
  if (std::find(subcommands.begin(), subcommands.end(), word) != subcommands.end()) return Status::OK();
  const std::string near = DidYouMean(word, subcommands);
  if (near.empty() || names_program(word)) return Status::OK();
  const std::string quoted = ShellQuote(word);
  return Status::InvalidArgument("unknown subcommand '" + Printable(word) + "' (did you mean '" + near +
                                 "'?); to run a program called '" + Printable(word) +
                                 "' on every slot, put it after `--`: dslaunch [options] -- " + Printable(quoted));
}

}  // namespace ds
