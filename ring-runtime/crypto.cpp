// SPDX-License-Identifier: GPL-2.0-or-later
// crypto.cpp -- the few things libringrt asks of OpenSSL's libcrypto (crypto.h).
#include "crypto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

namespace ringrt {

void hmac_sha256(const std::string& key, const void* data, size_t len, uint8_t out[32]) {
  unsigned int outlen = 32;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), static_cast<const unsigned char*>(data),
       len, out, &outlen);
}
bool random_bytes(void* buf, size_t len) {
  return RAND_bytes(static_cast<unsigned char*>(buf), static_cast<int>(len)) == 1;
}
bool equal_ct(const void* a, const void* b, size_t len) { return CRYPTO_memcmp(a, b, len) == 0; }
std::string hex(const uint8_t* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) { s.push_back(d[p[i] >> 4]); s.push_back(d[p[i] & 15]); }
  return s;
}

}  // namespace ringrt
