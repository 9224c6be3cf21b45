// The per-node form's job secret when node 0 is on loopback and no
// DSLAUNCH_SECRET_FILE is given (every node on this machine, run by one
// user): node 0, once it holds the rendezvous port, publishes a random
// secret in this user's private directory (common/private_dir.h) as
// per-node-<addr>-<port>.secret (mode 0600) and holds an exclusive flock on
// it for as long as it lives; the other nodes read it from there. Another
// user can neither read it nor plant one, so no key of the job is a value
// anyone else can compute. A file nobody holds locked is a dead node 0's:
// readers wait for the next one. Not thread-safe; one object per process.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/private_dir.h"
#include "common/status.h"

namespace ds {

class LoopbackSecret {
 public:
  // Publishes `secret` for `endpoint` ("127.0.0.1:29500"). PermissionDenied
  // when the private directory is not this user's (private_dir.h), Aborted
  // when a live node 0 of this user already publishes one for `endpoint`.
  static Result<std::unique_ptr<LoopbackSecret>> Publish(const std::string& endpoint, const std::string& secret);
  // Removes the file when it is still the one published here.
  ~LoopbackSecret();

  const std::string& path() const { return path_; }

 private:
  LoopbackSecret(PrivateDir dir, std::string name, UniqueFd file);
  PrivateDir dir_;
  std::string name_, path_;
  UniqueFd file_;  // holds the flock
};

// The secret a live node 0 of this user publishes for `endpoint`, waiting
// for one (told by inotify, not by polling) up to `timeout_s`;
// `waiting(path)` is called once if it must wait. Timeout names the file
// and what to check; PermissionDenied for a file or directory that is not
// this user's alone.
Result<std::string> AwaitLoopbackSecret(const std::string& endpoint, double timeout_s,
                                        const std::function<void(const std::string&)>& waiting);

// The file name for `endpoint`: "per-node-127.0.0.1-29500.secret".
std::string LoopbackSecretName(const std::string& endpoint);

}  // namespace ds
