// SPDX-License-Identifier: GPL-2.0-or-later
// reduce.h -- dtypes and the element-wise reduction kernels every transport uses.
#ifndef RINGRT_REDUCE_H
#define RINGRT_REDUCE_H

#include "ringrt.h"

#include <cstddef>
#include <cstdint>

namespace ringrt {

size_t dtype_size(ringrt_dtype_t t);
bool dtype_valid(int t);
bool op_valid(int op);
// dst[i] = dst[i] op src[i]
void reduce_into(void* dst, const void* src, size_t n, ringrt_dtype_t t, ringrt_op_t op);
// dst[i] = (dst[i] op src[i]) / div   (the final step of an AVG; div > 1)
void reduce_into_div(void* dst, const void* src, size_t n, ringrt_dtype_t t, ringrt_op_t op, int div);
// dst[i] /= div
void divide(void* dst, size_t n, ringrt_dtype_t t, int div);
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bf16_to_float(uint16_t h);
uint16_t float_to_bf16(float f);

}  // namespace ringrt

#endif  // RINGRT_REDUCE_H
