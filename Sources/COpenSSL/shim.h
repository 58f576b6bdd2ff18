#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <openssl/hmac.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <openssl/err.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/rsa.h>
#include <openssl/ocsp.h>
#include <openssl/param_build.h>
#include <openssl/core_names.h>
#include <openssl/pkcs7.h>
#include <openssl/asn1.h>

/* OSSL_PARAM_BLD keeps the parameter name pointers it is given: they must outlive the build,
   so they come from here (static storage) rather than from temporary Swift strings. */
static inline const char *tollgate_param_rsa_n(void) { return OSSL_PKEY_PARAM_RSA_N; }
static inline const char *tollgate_param_rsa_e(void) { return OSSL_PKEY_PARAM_RSA_E; }
