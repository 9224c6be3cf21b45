#include "launcher/failover/job_ca.h"

#include <arpa/inet.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "common/dir.h"

namespace ds::failover {
namespace {

struct PkeyFree { void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); } };
struct X509Free { void operator()(X509* p) const { X509_free(p); } };
struct BioFree { void operator()(BIO* p) const { BIO_free(p); } };
struct BnFree { void operator()(BIGNUM* p) const { BN_free(p); } };
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using Cert = std::unique_ptr<X509, X509Free>;

// OpenSSL's reason for the last failure, for a message.
Status SslError(const std::string& what) {
  const unsigned long e = ERR_get_error();
  char buf[256] = "unknown error";
  if (e != 0) ERR_error_string_n(e, buf, sizeof(buf));
  ERR_clear_error();
  return Status::Internal(fmt::format("per-job CA: {}: {}", what, buf));
}

Result<Pkey> NewKey() {
  Pkey key(EVP_EC_gen("P-256"));
  if (!key) return SslError("cannot make an EC P-256 key");
  return key;
}

Status AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) return SslError(fmt::format("extension {} = {}", OBJ_nid2sn(nid), value));
  const int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  return ok == 1 ? Status::OK() : SslError("X509_add_ext");
}

// A certificate for `key` named `cn`, valid from an hour ago for `days`,
// not yet signed; the issuer's name is `issuer`'s (or its own when null).
Result<Cert> NewCert(EVP_PKEY* key, const std::string& cn, int days, X509* issuer) {
  Cert cert(X509_new());
  std::unique_ptr<BIGNUM, BnFree> serial(BN_new());
  if (!cert || !serial || X509_set_version(cert.get(), 2) != 1 || BN_rand(serial.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
      BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())) == nullptr)
    return SslError("cannot make a certificate");
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_time_adj_ex(X509_getm_notAfter(cert.get()), days, 0, nullptr);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("dslaunch"), -1, -1, 0);
  if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1,
                                 0) != 1)
    return SslError(fmt::format("subject CN '{}'", cn));
  X509_set_issuer_name(cert.get(), issuer != nullptr ? X509_get_subject_name(issuer) : name);
  if (X509_set_pubkey(cert.get(), key) != 1) return SslError("X509_set_pubkey");
  return cert;
}

Result<std::string> CertPem(X509* cert) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) return SslError("PEM_write_bio_X509");
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

Result<std::string> KeyPem(EVP_PKEY* key) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1)
    return SslError("PEM_write_bio_PrivateKey");
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

bool IsIp(const std::string& text) {
  unsigned char buf[16];
  return ::inet_pton(AF_INET, text.c_str(), buf) == 1 || ::inet_pton(AF_INET6, text.c_str(), buf) == 1;
}

}  // namespace

struct JobCa::Keys {
  Pkey key;
  Cert cert;
};

JobCa::JobCa(std::unique_ptr<Keys> keys) : keys_(std::move(keys)) {}
JobCa::JobCa(JobCa&&) noexcept = default;
JobCa& JobCa::operator=(JobCa&&) noexcept = default;
JobCa::~JobCa() = default;

Result<JobCa> JobCa::Create(const std::string& job_id, int days) {
  auto keys = std::make_unique<Keys>();
  DS_ASSIGN_OR_RETURN(keys->key, NewKey());
  DS_ASSIGN_OR_RETURN(keys->cert, NewCert(keys->key.get(), "dslaunch job " + job_id + " CA", days, nullptr));
  X509* c = keys->cert.get();
  DS_RETURN_IF_ERROR(AddExtension(c, c, NID_basic_constraints, "critical,CA:TRUE,pathlen:0"));
  DS_RETURN_IF_ERROR(AddExtension(c, c, NID_key_usage, "critical,keyCertSign,cRLSign"));
  DS_RETURN_IF_ERROR(AddExtension(c, c, NID_subject_key_identifier, "hash"));
  if (X509_sign(c, keys->key.get(), EVP_sha256()) == 0) return SslError("cannot sign the CA certificate");
  DS_ASSIGN_OR_RETURN(std::string pem, CertPem(c));
  JobCa ca(std::move(keys));
  ca.cert_pem_ = std::move(pem);
  ca.days_ = days;
  return ca;
}

Result<JobCa> JobCa::FromPem(const IssuedCert& pem, int days) {
  auto keys = std::make_unique<Keys>();
  std::unique_ptr<BIO, BioFree> cert_bio(BIO_new_mem_buf(pem.cert_pem.data(), static_cast<int>(pem.cert_pem.size())));
  std::unique_ptr<BIO, BioFree> key_bio(BIO_new_mem_buf(pem.key_pem.data(), static_cast<int>(pem.key_pem.size())));
  if (!cert_bio || !key_bio) return SslError("BIO_new_mem_buf");
  keys->cert.reset(PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
  if (!keys->cert) return Status::InvalidArgument("per-job CA: the CA certificate is not a PEM certificate");
  keys->key.reset(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (!keys->key) return Status::InvalidArgument("per-job CA: the CA key is not a PEM private key");
  ERR_clear_error();
  if (X509_check_ca(keys->cert.get()) != 1)
    return Status::InvalidArgument("per-job CA: the certificate given is not a CA's");
  if (X509_check_private_key(keys->cert.get(), keys->key.get()) != 1) {
    ERR_clear_error();
    return Status::InvalidArgument("per-job CA: the key given is not the CA certificate's");
  }
  JobCa ca(std::move(keys));
  ca.cert_pem_ = pem.cert_pem;
  ca.days_ = days;
  return ca;
}

Result<std::string> JobCa::key_pem() const { return KeyPem(keys_->key.get()); }

Result<IssuedCert> JobCa::IssueServer(const std::string& name, const std::vector<std::string>& ips,
                                      const std::vector<std::string>& dns) const {
  std::vector<std::string> sans;
  for (const std::string& ip : ips) {
    if (!IsIp(ip))
      return Status::InvalidArgument(fmt::format("etcd member {}: '{}' is not an IP address (expected 10.0.0.1 or fd00::1)", name, ip));
    sans.push_back("IP:" + ip);
  }
  for (const std::string& d : dns) sans.push_back("DNS:" + d);
  return Issue(name, sans, /*server=*/true);
}

Result<IssuedCert> JobCa::IssueClient(const std::string& name) const { return Issue(name, {}, /*server=*/false); }

Result<IssuedCert> JobCa::Issue(const std::string& name, const std::vector<std::string>& sans, bool server) const {
  DS_ASSIGN_OR_RETURN(Pkey key, NewKey());
  DS_ASSIGN_OR_RETURN(Cert cert, NewCert(key.get(), name, days_, keys_->cert.get()));
  X509* c = cert.get();
  X509* ca = keys_->cert.get();
  DS_RETURN_IF_ERROR(AddExtension(c, ca, NID_basic_constraints, "critical,CA:FALSE"));
  DS_RETURN_IF_ERROR(AddExtension(c, ca, NID_key_usage, "critical,digitalSignature,keyEncipherment"));
  DS_RETURN_IF_ERROR(AddExtension(c, ca, NID_ext_key_usage, server ? "serverAuth,clientAuth" : "clientAuth"));
  DS_RETURN_IF_ERROR(AddExtension(c, ca, NID_authority_key_identifier, "keyid:always"));
  if (!sans.empty()) {
    std::string list;
    for (const std::string& s : sans) list += (list.empty() ? "" : ",") + s;
    DS_RETURN_IF_ERROR(AddExtension(c, ca, NID_subject_alt_name, list));
  }
  if (X509_sign(c, keys_->key.get(), EVP_sha256()) == 0) return SslError("cannot sign the certificate of " + name);
  IssuedCert out;
  DS_ASSIGN_OR_RETURN(out.cert_pem, CertPem(c));
  DS_ASSIGN_OR_RETURN(out.key_pem, KeyPem(key.get()));
  return out;
}

Result<Dir> MakePrivateDir(const std::string& path, const std::string& what) {
  DS_ASSIGN_OR_RETURN(Dir d, Dir::Make(path, what, 0700));
  struct stat st;
  if (::fstat(d.fd(), &st) != 0) return Status::IOError(fmt::format("{} {}: fstat failed", what, path));
  if ((st.st_mode & 077) != 0)
    return Status::PermissionDenied(
        fmt::format("{} {} mode {:o} lets others in; expected 0700", what, path, st.st_mode & 0777));
  return d;
}

Result<TlsPaths> WriteTlsDir(const std::string& dir, const std::string& ca_pem, const IssuedCert& cert,
                             const std::string& stem) {
  DS_ASSIGN_OR_RETURN(Dir d, MakePrivateDir(dir, "etcd TLS directory"));
  TlsPaths paths{dir, d.PathOf("ca.crt"), d.PathOf(stem + ".crt"), d.PathOf(stem + ".key")};
  DS_RETURN_IF_ERROR(d.WriteFile("ca.crt", ca_pem, 0600));
  DS_RETURN_IF_ERROR(d.WriteFile(stem + ".key", cert.key_pem, 0600));
  DS_RETURN_IF_ERROR(d.WriteFile(stem + ".crt", cert.cert_pem, 0600));
  return paths;
}

}  // namespace ds::failover
