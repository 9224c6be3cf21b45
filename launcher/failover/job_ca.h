// The per-job certificate authority of the embedded etcd: a CA
// made for one job (an ECDSA P-256 key that lives in the memory of the
// job's coordinators only: dslaunch, and the standbys its replicas' briefs
// carry it to, so that whichever leads can issue a replacement member's
// certificate; never in a file), a self-signed certificate), a server certificate per etcd member with the
// member's IPs (and names) as subject alternative names, valid for server
// and client use (etcd's members dial each other with it, and its gateway
// dials its own gRPC port with it), and client certificates for the
// coordinators and agents. Only holders of a certificate this CA signed
// reach the job's etcd (the members run with --client-cert-auth and
// --peer-client-cert-auth).
//
// WriteTlsDir puts one holder's files in a private directory: made 0700 when
// missing, refused when it is a symlink, another user's or open to others;
// each file written 0600 through the directory's descriptor (O_NOFOLLOW,
// O_EXCL on a temporary name, renamed). Move-only; const methods are
// thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/dir.h"
#include "common/status.h"

namespace ds::failover {

struct IssuedCert {
  std::string cert_pem;
  std::string key_pem;  // PKCS#8, unencrypted: the file holding it is 0600 in a 0700 directory
};

class JobCa {
 public:
  // A new CA for the job `job_id` (its name goes in the subject), valid
  // from an hour ago (clocks of the hosts differ) for `days`. Internal with
  // OpenSSL's reason when a key or certificate cannot be made.
  static Result<JobCa> Create(const std::string& job_id, int days = 365);
  JobCa(JobCa&&) noexcept;
  JobCa& operator=(JobCa&&) noexcept;
  ~JobCa();

  // The CA again from its certificate and key (a standby's brief):
  // InvalidArgument when either is not PEM, the certificate is not a CA's
  // or the key is not its own.
  static Result<JobCa> FromPem(const IssuedCert& pem, int days = 365);

  const std::string& cert_pem() const { return cert_pem_; }
  Result<std::string> key_pem() const;  // PKCS#8 PEM: for a standby's brief, never a file
  // A member's certificate: CN `name`, SANs the IPs (v4 or v6) and DNS
  // names given, extended key usage server and client. InvalidArgument
  // naming an entry of `ips` that is not an IP address.
  Result<IssuedCert> IssueServer(const std::string& name, const std::vector<std::string>& ips,
                                 const std::vector<std::string>& dns = {}) const;
  // A client's certificate: CN `name`, extended key usage client.
  Result<IssuedCert> IssueClient(const std::string& name) const;

 private:
  struct Keys;
  explicit JobCa(std::unique_ptr<Keys> keys);
  Result<IssuedCert> Issue(const std::string& name, const std::vector<std::string>& sans, bool server) const;
  std::unique_ptr<Keys> keys_;
  std::string cert_pem_;
  int days_ = 365;
};

// The directory `path` (made 0700 when missing) as a Dir, refused
// (PermissionDenied) when it is a symlink, another user's or lets group or
// others in: "<what> /x mode 755 lets others in; expected 0700". For the
// TLS directories and the members' data directories.
Result<Dir> MakePrivateDir(const std::string& path, const std::string& what);

// Where WriteTlsDir put a holder's files.
struct TlsPaths {
  std::string dir, ca_file, cert_file, key_file;
};

// Writes ca.crt, <stem>.crt and <stem>.key (0600) into `dir` (made 0700
// when missing). PermissionDenied naming the directory when it is a
// symlink, another user's, or lets group or others in ("etcd TLS directory
// /x mode 755 lets others in; expected 0700"); IOError with the system's
// reason when a file cannot be written.
Result<TlsPaths> WriteTlsDir(const std::string& dir, const std::string& ca_pem, const IssuedCert& cert,
                             const std::string& stem);

}  // namespace ds::failover
