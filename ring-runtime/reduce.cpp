// SPDX-License-Identifier: GPL-2.0-or-later
// reduce.cpp -- element-wise reduction kernels for every dtype and op. float16 and bfloat16 are
// widened to float, combined, and rounded back to nearest even once per combination.
#pragma GCC optimize("O3")
#include "reduce.h"

#include <algorithm>
#include <cstring>

namespace ringrt {

size_t dtype_size(ringrt_dtype_t t) {
  switch (t) {
    case RINGRT_FLOAT32: return 4;
    case RINGRT_FLOAT64: return 8;
    case RINGRT_FLOAT16: return 2;
    case RINGRT_BFLOAT16: return 2;
    case RINGRT_INT32: return 4;
    case RINGRT_INT64: return 8;
  }
  return 0;
}
bool dtype_valid(int t) { return t >= RINGRT_FLOAT32 && t <= RINGRT_INT64; }
bool op_valid(int op) { return op >= RINGRT_SUM && op <= RINGRT_MAX; }

float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do { man <<= 1; e++; } while ((man & 0x400u) == 0);
      bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (man & 0x3ffu) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | man << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | man << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) {  // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u | ((absx >> 13) & 0x3ffu) : 0));
  }
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (absx < 0x38800000u) {  // subnormal half or zero
    if (absx < 0x33000000u) return static_cast<uint16_t>(sign);  // < half of smallest subnormal
    // value = m * 2^(e-150); in units of the half subnormal step 2^-24: m * 2^(e-126)
    uint32_t e = absx >> 23;
    uint32_t m = (absx & 0x7fffffu) | 0x800000u;
    uint32_t s = 126 - e;  // 14 .. 24
    uint32_t res = m >> s;
    uint32_t rem = m & ((1u << s) - 1);
    uint32_t halfway = 1u << (s - 1);
    if (rem > halfway || (rem == halfway && (res & 1u))) res++;
    return static_cast<uint16_t>(sign | res);
  }
  uint32_t e = (absx >> 23) - 127 + 15;
  uint32_t m = absx & 0x7fffffu;
  uint32_t res = (e << 10) | (m >> 13);
  uint32_t rem = m & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (res & 1u))) res++;  // may carry into exponent: fine
  return static_cast<uint16_t>(sign | res);
}

float bf16_to_float(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet nan
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

namespace {

template <typename T>
inline T apply(T a, T b, ringrt_op_t op) {
  switch (op) {
    case RINGRT_MIN: return b < a ? b : a;
    case RINGRT_MAX: return b > a ? b : a;
    default: return a + b;
  }
}

template <typename T>
void reduce_native(T* __restrict d, const T* __restrict s, size_t n, ringrt_op_t op) {
  switch (op) {
    case RINGRT_MIN:
      for (size_t i = 0; i < n; ++i) d[i] = s[i] < d[i] ? s[i] : d[i];
      break;
    case RINGRT_MAX:
      for (size_t i = 0; i < n; ++i) d[i] = s[i] > d[i] ? s[i] : d[i];
      break;
    default:
      for (size_t i = 0; i < n; ++i) d[i] = d[i] + s[i];
      break;
  }
}

template <typename T>
void reduce_native_div(T* __restrict d, const T* __restrict s, size_t n, ringrt_op_t op, int div) {
  if (op != RINGRT_SUM && op != RINGRT_AVG) { reduce_native(d, s, n, op); return; }
  const T dv = static_cast<T>(div);
  for (size_t i = 0; i < n; ++i) d[i] = (d[i] + s[i]) / dv;
}

template <float (*ToF)(uint16_t), uint16_t (*FromF)(float)>
void reduce_16(uint16_t* d, const uint16_t* s, size_t n, ringrt_op_t op, int div) {
  const float dv = static_cast<float>(div);
  for (size_t i = 0; i < n; ++i) {
    float a = ToF(d[i]), b = ToF(s[i]);
    float r = apply(a, b, op);
    if (div > 1 && (op == RINGRT_SUM || op == RINGRT_AVG)) r = r / dv;
    d[i] = FromF(r);
  }
}

}  // namespace

void reduce_into(void* dst, const void* src, size_t n, ringrt_dtype_t t, ringrt_op_t op) {
  switch (t) {
    case RINGRT_FLOAT32: reduce_native(static_cast<float*>(dst), static_cast<const float*>(src), n, op); break;
    case RINGRT_FLOAT64: reduce_native(static_cast<double*>(dst), static_cast<const double*>(src), n, op); break;
    case RINGRT_INT32: reduce_native(static_cast<int32_t*>(dst), static_cast<const int32_t*>(src), n, op); break;
    case RINGRT_INT64: reduce_native(static_cast<int64_t*>(dst), static_cast<const int64_t*>(src), n, op); break;
    case RINGRT_FLOAT16:
      reduce_16<half_to_float, float_to_half>(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), n, op, 1);
      break;
    case RINGRT_BFLOAT16:
      reduce_16<bf16_to_float, float_to_bf16>(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), n, op, 1);
      break;
  }
}

void reduce_into_div(void* dst, const void* src, size_t n, ringrt_dtype_t t, ringrt_op_t op, int div) {
  if (div <= 1) { reduce_into(dst, src, n, t, op); return; }
  switch (t) {
    case RINGRT_FLOAT32: reduce_native_div(static_cast<float*>(dst), static_cast<const float*>(src), n, op, div); break;
    case RINGRT_FLOAT64: reduce_native_div(static_cast<double*>(dst), static_cast<const double*>(src), n, op, div); break;
    case RINGRT_INT32: reduce_native_div(static_cast<int32_t*>(dst), static_cast<const int32_t*>(src), n, op, div); break;
    case RINGRT_INT64: reduce_native_div(static_cast<int64_t*>(dst), static_cast<const int64_t*>(src), n, op, div); break;
    case RINGRT_FLOAT16:
      reduce_16<half_to_float, float_to_half>(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), n, op, div);
      break;
    case RINGRT_BFLOAT16:
      reduce_16<bf16_to_float, float_to_bf16>(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), n, op, div);
      break;
  }
}

void divide(void* dst, size_t n, ringrt_dtype_t t, int div) {
  if (div <= 1) return;
  switch (t) {
    case RINGRT_FLOAT32: { float* d = static_cast<float*>(dst); float v = static_cast<float>(div); for (size_t i = 0; i < n; ++i) d[i] /= v; break; }
    case RINGRT_FLOAT64: { double* d = static_cast<double*>(dst); double v = div; for (size_t i = 0; i < n; ++i) d[i] /= v; break; }
    case RINGRT_INT32: { int32_t* d = static_cast<int32_t*>(dst); for (size_t i = 0; i < n; ++i) d[i] /= div; break; }
    case RINGRT_INT64: { int64_t* d = static_cast<int64_t*>(dst); for (size_t i = 0; i < n; ++i) d[i] /= div; break; }
    case RINGRT_FLOAT16: { uint16_t* d = static_cast<uint16_t*>(dst); float v = static_cast<float>(div); for (size_t i = 0; i < n; ++i) d[i] = float_to_half(half_to_float(d[i]) / v); break; }
    case RINGRT_BFLOAT16: { uint16_t* d = static_cast<uint16_t*>(dst); float v = static_cast<float>(div); for (size_t i = 0; i < n; ++i) d[i] = float_to_bf16(bf16_to_float(d[i]) / v); break; }
  }
}

}  // namespace ringrt
