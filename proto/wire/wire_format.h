// The protobuf wire format, by hand: what the generated wire_capture.h classes (gen_wire.py)
// serialise with. No libprotobuf behind it, so the hook that uses it leaves the program's
// protobuf alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace gpuhook::wire {

inline size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}
inline size_t TagSize(uint32_t field) { return VarintSize(uint64_t{field} << 3); }
inline size_t LengthDelimitedSize(size_t n) { return VarintSize(n) + n; }
inline uint64_t ZigZag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }

inline uint8_t* WriteVarint(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}
inline uint8_t* WriteTag(uint8_t* p, uint32_t field, uint32_t wire_type) {
  return WriteVarint(p, uint64_t{field} << 3 | wire_type);
}
inline uint8_t* WriteVarintField(uint8_t* p, uint32_t field, uint64_t v) { return WriteVarint(WriteTag(p, field, 0), v); }
inline uint8_t* WriteBytes(uint8_t* p, uint32_t field, const std::string& s) {
  p = WriteVarint(WriteTag(p, field, 2), s.size());
  if (!s.empty()) std::memcpy(p, s.data(), s.size());
  return p + s.size();
}

// `s` with every byte that does not belong to a well-formed UTF-8 sequence (RFC 3629: no
// overlong forms, no surrogates, nothing past U+10FFFF) replaced by U+FFFD. protobuf refuses
// to parse a proto3 `string` field that is not UTF-8, so a setting or a name that is not
// would otherwise cost the reader the whole record.
std::string ValidUtf8(std::string_view s);

}  // namespace gpuhook::wire
