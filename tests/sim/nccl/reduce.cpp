#include "reduce.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace simnccl {

namespace {

// IEEE half <-> float, without relying on compiler support for _Float16.
float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while ((man & 0x400u) == 0) {
        man <<= 1;
        --exp;
      }
      bits = sign | (exp << 23) | ((man & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xffu) - 127 + 15;
  uint32_t man = x & 0x7fffffu;
  if (((x >> 23) & 0xffu) == 0xffu) return static_cast<uint16_t>(sign | 0x7c00u | (man ? 0x200u : 0));
  if (exp >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    man |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half = man >> shift;
    if ((man >> (shift - 1)) & 1u) ++half;  // round half up: good enough for a simulator
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(exp) << 10) | (man >> 13);
  if (man & 0x1000u) ++half;
  return static_cast<uint16_t>(half);
}

float bf16_to_float(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  x += 0x7fffu + ((x >> 16) & 1u);  // round to nearest even
  return static_cast<uint16_t>(x >> 16);
}

template <typename T>
T apply(T a, T b, ncclRedOp_t op) {
  switch (op) {
    case ncclProd: return static_cast<T>(a * b);
    case ncclMax: return std::max(a, b);
    case ncclMin: return std::min(a, b);
    default: return static_cast<T>(a + b);  // ncclSum, ncclAvg (divided at the end)
  }
}

template <typename T>
void reduce_typed(void* acc, const void* in, size_t n, ncclRedOp_t op) {
  auto* a = static_cast<T*>(acc);
  const auto* b = static_cast<const T*>(in);
  for (size_t i = 0; i < n; ++i) a[i] = apply(a[i], b[i], op);
}

template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
void reduce_16(void* acc, const void* in, size_t n, ncclRedOp_t op) {
  auto* a = static_cast<uint16_t*>(acc);
  const auto* b = static_cast<const uint16_t*>(in);
  for (size_t i = 0; i < n; ++i) a[i] = Store(apply(Load(a[i]), Load(b[i]), op));
}

template <typename T>
void scale_typed(void* data, size_t n, const void* scalar) {
  T factor;
  memcpy(&factor, scalar, sizeof factor);
  auto* a = static_cast<T*>(data);
  for (size_t i = 0; i < n; ++i) a[i] = static_cast<T>(a[i] * factor);
}

template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
void scale_16(void* data, size_t n, const void* scalar) {
  uint16_t bits;
  memcpy(&bits, scalar, sizeof bits);
  const float factor = Load(bits);
  auto* a = static_cast<uint16_t*>(data);
  for (size_t i = 0; i < n; ++i) a[i] = Store(Load(a[i]) * factor);
}

template <typename T>
void divide_typed(void* acc, size_t n, int nranks) {
  auto* a = static_cast<T*>(acc);
  for (size_t i = 0; i < n; ++i) a[i] = static_cast<T>(a[i] / static_cast<T>(nranks));
}

}  // namespace

size_t dtype_bytes(ncclDataType_t dtype) {
  switch (dtype) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
  }
}

const char* dtype_suffix(ncclDataType_t dtype) {
  switch (dtype) {
    case ncclInt8: return "i8";
    case ncclUint8: return "u8";
    case ncclInt32: return "i32";
    case ncclUint32: return "u32";
    case ncclInt64: return "i64";
    case ncclUint64: return "u64";
    case ncclFloat16: return "f16";
    case ncclFloat32: return "f32";
    case ncclFloat64: return "f64";
    case ncclBfloat16: return "bf16";
    case ncclFloat8e4m3: return "f8e4m3";
    case ncclFloat8e5m2: return "f8e5m2";
    default: return "unknown";
  }
}

bool redop_valid(ncclRedOp_t op) { return op >= ncclSum && op <= ncclAvg; }

bool reduce_into(void* acc, const void* in, size_t n, ncclDataType_t dtype, ncclRedOp_t op) {
  if (!redop_valid(op)) return false;
  switch (dtype) {
    case ncclInt8: reduce_typed<int8_t>(acc, in, n, op); return true;
    case ncclUint8: reduce_typed<uint8_t>(acc, in, n, op); return true;
    case ncclInt32: reduce_typed<int32_t>(acc, in, n, op); return true;
    case ncclUint32: reduce_typed<uint32_t>(acc, in, n, op); return true;
    case ncclInt64: reduce_typed<int64_t>(acc, in, n, op); return true;
    case ncclUint64: reduce_typed<uint64_t>(acc, in, n, op); return true;
    case ncclFloat32: reduce_typed<float>(acc, in, n, op); return true;
    case ncclFloat64: reduce_typed<double>(acc, in, n, op); return true;
    case ncclFloat16: reduce_16<half_to_float, float_to_half>(acc, in, n, op); return true;
    case ncclBfloat16: reduce_16<bf16_to_float, float_to_bf16>(acc, in, n, op); return true;
    default: return false;
  }
}

bool scale_by(void* data, size_t n, ncclDataType_t dtype, const void* scalar) {
  switch (dtype) {
    case ncclInt8: scale_typed<int8_t>(data, n, scalar); return true;
    case ncclUint8: scale_typed<uint8_t>(data, n, scalar); return true;
    case ncclInt32: scale_typed<int32_t>(data, n, scalar); return true;
    case ncclUint32: scale_typed<uint32_t>(data, n, scalar); return true;
    case ncclInt64: scale_typed<int64_t>(data, n, scalar); return true;
    case ncclUint64: scale_typed<uint64_t>(data, n, scalar); return true;
    case ncclFloat32: scale_typed<float>(data, n, scalar); return true;
    case ncclFloat64: scale_typed<double>(data, n, scalar); return true;
    case ncclFloat16: scale_16<half_to_float, float_to_half>(data, n, scalar); return true;
    case ncclBfloat16: scale_16<bf16_to_float, float_to_bf16>(data, n, scalar); return true;
    default: return false;
  }
}

void finish_average(void* acc, size_t n, ncclDataType_t dtype, int nranks) {
  switch (dtype) {
    case ncclInt8: divide_typed<int8_t>(acc, n, nranks); break;
    case ncclUint8: divide_typed<uint8_t>(acc, n, nranks); break;
    case ncclInt32: divide_typed<int32_t>(acc, n, nranks); break;
    case ncclUint32: divide_typed<uint32_t>(acc, n, nranks); break;
    case ncclInt64: divide_typed<int64_t>(acc, n, nranks); break;
    case ncclUint64: divide_typed<uint64_t>(acc, n, nranks); break;
    case ncclFloat32: divide_typed<float>(acc, n, nranks); break;
    case ncclFloat64: divide_typed<double>(acc, n, nranks); break;
    case ncclFloat16: {
      auto* a = static_cast<uint16_t*>(acc);
      for (size_t i = 0; i < n; ++i) a[i] = float_to_half(half_to_float(a[i]) / static_cast<float>(nranks));
      break;
    }
    case ncclBfloat16: {
      auto* a = static_cast<uint16_t*>(acc);
      for (size_t i = 0; i < n; ++i) a[i] = float_to_bf16(bf16_to_float(a[i]) / static_cast<float>(nranks));
      break;
    }
    default: break;
  }
}

}  // namespace simnccl
