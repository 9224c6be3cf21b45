#include "launcher/config/hostfile.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

#include "common/files.h"
#include "common/strings.h"
#include "launcher/config/env_limits.h"
#include "launcher/config/job_spec.h"

namespace ds {
namespace {

// The keys dslaunch understands after the host name. Anything else must look
// like an environment variable name (upper case) and is set for that host's
// workers.
const std::vector<std::string> kHostKeys = {"slots", "ssh_port", "user", "max_slots"};

struct Token {
  std::string text;
  size_t col = 0;  // 0-based column in the line
};

// Splits on blanks, remembering where each token starts.
std::vector<Token> Tokenize(const std::string& line) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i >= line.size()) break;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    out.push_back({line.substr(start, i - start), start});
  }
  return out;
}

// "path:line: message\n<line>\n<caret>" (ninja's Lexer::Error style). Tabs in
// the line are copied into the caret line so the caret lines up. What the
// file said (the line, the quoted words) reaches the terminal escaped
// (PrintableText); the caret counts the escapes.
Status LineError(const std::string& path, int lineno, const std::string& line, size_t col,
                 const std::string& message) {
  std::string caret;
  for (char c : PrintableText(line.substr(0, std::min(col, line.size())))) caret += c == '\t' ? '\t' : ' ';
  caret += '^';
  return Status::InvalidArgument(PrintableText(path + ":" + std::to_string(lineno) + ": " + message) + "\n" +
                                 PrintableText(line) + "\n" + caret);
}

bool IsHostChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
}

bool IsEnvName(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!(std::isupper(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_'))
      return false;
  return true;
}

bool IsIpv6Char(char c) {
  return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.' || c == '%';
}

// One hostfile line being parsed: where it is, for LineError.
struct HostLine {
  const std::string& path;
  int lineno;
  const std::string& raw;  // as written, comment included (the error shows it)
  std::vector<std::string>& notices;  // the file's notices (Hostfile::notices)
  Status Error(size_t col, const std::string& msg) const { return LineError(path, lineno, raw, col, msg); }
};

// "[fe80::1]" -> "fe80::1".
Result<std::string> ParseBracketedIpv6(const Token& host, const HostLine& l) {
  size_t close = host.text.find(']');
  if (close == std::string::npos || close + 1 != host.text.size())
    return l.Error(host.col, "expected an IPv6 address in brackets such as '[fe80::1]', got '" + host.text + "'");
  std::string name = host.text.substr(1, close - 1);
  if (name.empty() || name.find(':') == std::string::npos)
    return l.Error(host.col, "expected an IPv6 address inside the brackets, got '" + host.text + "'");
  for (size_t i = 0; i < name.size(); ++i)
    if (!IsIpv6Char(name[i]))
      return l.Error(host.col + 1 + i, "unexpected character '" + std::string(1, name[i]) +
                                           "' in IPv6 address '" + host.text + "'");
  return name;
}

// The host: a name, or an IPv6 literal in brackets.
Result<std::string> ParseHostName(const Token& host, const HostLine& l) {
  if (host.text[0] == '[') return ParseBracketedIpv6(host, l);
  if (host.text.find(':') != std::string::npos)
    return l.Error(host.col, "an IPv6 address must be written in brackets, e.g. '[" + host.text + "]'");
  if (host.text.find('=') != std::string::npos)
    return l.Error(host.col, "expected a host name before '" + host.text + "'");
  if (host.text.find('@') != std::string::npos)
    return l.Error(host.col + host.text.find('@'), "'@' is not allowed in a host name; write the login as 'user=NAME'");
  for (size_t i = 0; i < host.text.size(); ++i)
    if (!IsHostChar(host.text[i]))
      return l.Error(host.col + i, "unexpected character '" + std::string(1, host.text[i]) + "' in host name '" +
                                       host.text + "'");
  return host.text;
}

// slots=N, which must come right after the host.
Result<int> ParseSlots(const Token& slots, const HostLine& l) {
  size_t eq = slots.text.find('=');
  std::string key = slots.text.substr(0, eq);
  if (key != "slots" || eq == std::string::npos) {
    std::string msg = "expected 'slots=N', got '" + slots.text + "'";
    std::string near = DidYouMean(key, {"slots"});
    if (!near.empty() && key != "slots") msg += " (did you mean 'slots'?)";
    return l.Error(slots.col, msg);
  }
  std::string value = slots.text.substr(eq + 1);
  auto n = ParseInt(value);
  if (!n) return l.Error(slots.col + eq + 1, "expected an integer after 'slots=', got '" + value + "'");
  if (*n < 1 || *n > kMaxSlotsPerHost)
    return l.Error(slots.col + eq + 1, "slots must be between 1 and " + std::to_string(kMaxSlotsPerHost) + ", got " + value);
  return static_cast<int>(*n);
}

// One optional KEY=VALUE after slots=, applied to `h`; `seen` holds the keys
// already given on this line.
Status ParseHostKey(const Token& t, const HostLine& l, std::set<std::string>& seen, HostEntry& h) {
  size_t e = t.text.find('=');
  if (e == std::string::npos || e == 0)
    return l.Error(t.col, "expected KEY=VALUE (ssh_port=N, user=NAME or an environment variable "
                          "such as NCCL_SOCKET_IFNAME=eth0), got '" + t.text + "'");
  std::string k = t.text.substr(0, e), v = t.text.substr(e + 1);
  if (v.empty()) return l.Error(t.col + e + 1, "expected a value after '" + k + "='");
  if (!seen.insert(k).second) return l.Error(t.col, "duplicate key '" + k + "' for host '" + h.name + "'");
  if (k == "slots") return l.Error(t.col, "duplicate key 'slots' for host '" + h.name + "'");
  if (k == "ssh_port") {
    auto port = ParseInt(v);
    if (!port || *port < 1 || *port > 65535)
      return l.Error(t.col + e + 1, "expected a port number between 1 and 65535 after 'ssh_port=', got '" + v + "'");
    h.ssh_port = static_cast<int>(*port);
  } else if (k == "user") {
    h.user = v;
  } else if (k == "max_slots") {
    // OpenMPI's oversubscription limit: dslaunch starts exactly the selected slots.
    // One notice per file: the first line that has one.
    const bool first = std::none_of(l.notices.begin(), l.notices.end(),
                                    [](const std::string& n) { return n.find(" max_slots=") != std::string::npos; });
    if (first)
      l.notices.push_back(l.path + ":" + std::to_string(l.lineno) + ": ignoring max_slots=" + Printable(v) +
                          " (OpenMPI's limit; dslaunch runs one worker per selected slot), here and on later lines");
  } else if (IsEnvName(k) && !IsUserSettableEnv(k)) {
    return l.Error(t.col, k + " is set by dslaunch for every worker and cannot be set per host");
  } else if (IsEnvName(k)) {
    if (std::string problem = EnvEntryProblem(k, v); !problem.empty()) return l.Error(t.col + e + 1, problem);
    h.env[k] = v;
  } else {
    return l.Error(t.col, "unknown key '" + k + "'" + DidYouMeanHint(k, kHostKeys) +
                              "; expected ssh_port=, user= or an environment variable in capitals");
  }
  return Status::OK();
}

// The host of one non-empty line: name, slots and keys. `first_line` maps
// the hosts of earlier lines to their line numbers.
Result<HostEntry> ParseHostLine(const std::vector<Token>& toks, size_t line_size, const HostLine& l,
                                const std::map<std::string, int>& first_line) {
  HostEntry h;
  h.line = l.lineno;
  const Token& host = toks[0];
  DS_ASSIGN_OR_RETURN(h.name, ParseHostName(host, l));
  auto dup = first_line.find(h.name);
  if (dup != first_line.end())
    return l.Error(host.col, "duplicate host '" + h.name + "' (first defined on line " +
                                 std::to_string(dup->second) + ")");
  if (toks.size() < 2) return l.Error(line_size, "expected 'slots=N' after the host name");
  DS_ASSIGN_OR_RETURN(h.slots, ParseSlots(toks[1], l));
  std::set<std::string> seen;
  for (size_t i = 2; i < toks.size(); ++i) DS_RETURN_IF_ERROR(ParseHostKey(toks[i], l, seen, h));
  return h;
}

}  // namespace

Result<Hostfile> ParseHostfile(const std::string& text, const std::string& path) {
  Hostfile hf;
  hf.path = path;
  std::map<std::string, int> first_line;  // host -> line it was defined on
  int64_t world = 0;                      // slots so far
  std::istringstream in(text);
  std::string raw;
  int lineno = 0;
  while (std::getline(in, raw)) {
    ++lineno;
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    const HostLine where{path, lineno, raw, hf.notices};
    if (size_t nul = raw.find('\0'); nul != std::string::npos)  // exec would cut a value short there
      return where.Error(nul, "unexpected NUL byte");
    std::string line = raw.substr(0, raw.find('#'));  // whole-line and trailing comments
    std::vector<Token> toks = Tokenize(line);
    if (toks.empty()) continue;
    DS_ASSIGN_OR_RETURN(HostEntry h, ParseHostLine(toks, line.size(), where, first_line));
    world += h.slots;  // each <= kMaxSlotsPerHost: the int64 sum cannot overflow
    if (world > kMaxWorldSize)
      return where.Error(toks[1].col + 6, "the hosts' slots add up to " + std::to_string(world) +
                                              " here, more than the maximum world size " +
                                              std::to_string(kMaxWorldSize));
    first_line[h.name] = lineno;
    hf.hosts.push_back(std::move(h));
  }
  if (hf.hosts.empty())
    return Status::InvalidArgument(path + ": no hosts; expected lines such as 'worker-0 slots=4'");
  return hf;
}

Result<Hostfile> LoadHostfile(const std::string& path) {
  DS_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, "hostfile"));
  return ParseHostfile(text, path);
}

Hostfile LocalHostfile(int cpus, int gpus) {
  Hostfile hf;
  HostEntry h;
  h.name = "localhost";
  h.slots = gpus > 0 ? gpus : std::max(1, cpus);
  h.line = 0;
  hf.hosts.push_back(h);
  return hf;
}

}  // namespace ds
