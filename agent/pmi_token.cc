#include "agent/pmi_token.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "common/strings.h"

namespace ds {
namespace {

constexpr const char* kKey = "dslaunch-agent-token";

// One request line out, one answer line back, parsed into its key=value pairs.
Result<std::map<std::string, std::string>> Ask(int fd, const std::string& request) {
  const std::string line = request + "\n";
  for (size_t off = 0; off < line.size();) {
    // A socket (hydra's): a server gone is an error here, not SIGPIPE.
    const ssize_t n = ::send(fd, line.data() + off, line.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::IOError("PMI " + request + ": " + std::strerror(errno));
    off += static_cast<size_t>(n);
  }
  std::string answer;
  char c;
  while (answer.size() < 4096) {
    const ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::IOError("PMI " + request + ": the connection closed");
    if (c == '\n') break;
    answer.push_back(c);
  }
  std::map<std::string, std::string> kv;
  for (const std::string& word : Split(answer, ' ')) {
    const size_t eq = word.find('=');
    if (eq != std::string::npos) kv[word.substr(0, eq)] = word.substr(eq + 1);
  }
  if (kv.count("rc") && kv["rc"] != "0") return Status::IOError("PMI " + request + ": answered '" + answer + "'");
  return kv;
}

}  // namespace

Result<std::string> TokenThroughPmi(int pmi_fd, int rank, const std::string& token) {
  DS_RETURN_IF_ERROR(Ask(pmi_fd, "cmd=init pmi_version=1 pmi_subversion=1").status());
  DS_ASSIGN_OR_RETURN(auto name, Ask(pmi_fd, "cmd=get_my_kvsname"));
  const std::string kvs = name["kvsname"];
  if (kvs.empty()) return Status::IOError("PMI cmd=get_my_kvsname: no kvsname in the answer");
  if (rank == 0) {
    if (token.empty() || token.find_first_of(" \n=") != std::string::npos)
      return Status::InvalidArgument("PMI: rank 0 has no token to share (expected one word on stdin)");
    DS_RETURN_IF_ERROR(Ask(pmi_fd, "cmd=put kvsname=" + kvs + " key=" + kKey + " value=" + token).status());
  }
  DS_RETURN_IF_ERROR(Ask(pmi_fd, "cmd=barrier_in").status());
  std::string shared = token;
  if (rank != 0) {
    DS_ASSIGN_OR_RETURN(auto got, Ask(pmi_fd, "cmd=get kvsname=" + kvs + " key=" + kKey));
    shared = got["value"];
    if (shared.empty()) return Status::IOError("PMI cmd=get: rank 0 shared no token");
  }
  DS_RETURN_IF_ERROR(Ask(pmi_fd, "cmd=finalize").status());
  return shared;
}

}  // namespace ds
