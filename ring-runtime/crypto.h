// SPDX-License-Identifier: GPL-2.0-or-later
// crypto.h -- HMAC-SHA256, random bytes, constant-time comparison (OpenSSL libcrypto), hex.
#ifndef RINGRT_CRYPTO_H
#define RINGRT_CRYPTO_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace ringrt {

void hmac_sha256(const std::string& key, const void* data, size_t len, uint8_t out[32]);
bool random_bytes(void* buf, size_t len);
bool equal_ct(const void* a, const void* b, size_t len);  // constant-time compare
std::string hex(const uint8_t* p, size_t n);

}  // namespace ringrt

#endif  // RINGRT_CRYPTO_H
