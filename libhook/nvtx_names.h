// NVTX names on their way into records: UTF-8 from wide strings, the length limit, and the
// process-wide table of domain names and registered strings.
#pragma once

#include <cstddef>
#include <cstdint>

#include "host_record.h"  // kMaxNameBytes, kCutMarker

namespace gpuhook::hook {

// The longest prefix of s[0..n) that does not end inside a UTF-8 character (n <= bytes of s).
size_t utf8_prefix(const char* s, size_t n);

// UTF-8 of a NUL-terminated wide string into out[0..cap), NUL-terminated (cap >= 1). wchar_t
// is UTF-32 on Linux; the C library's wcrtomb is not used because in the "C" locale, which a
// program has until it calls setlocale, it fails on every non-ASCII character. A value that
// is not a Unicode scalar (a surrogate, above U+10FFFF) becomes U+FFFD. Returns the bytes
// written; *cut is set when the string did not fit (the output then ends at a whole character).
size_t utf8_from_wide(const wchar_t* w, char* out, size_t cap, bool* cut);

// A name kept for the life of the process, one per distinct text: the domain names and
// registered strings that records refer to by pointer. `text` stays first: the writer reads it
// through the pointer in the record. Entries are never freed nor reused, so a record still in
// a ring when its domain is destroyed can never name another domain.
struct InternedName {
  const char* text;
};

// The entry for s[0..n) (cut at kMaxNameBytes and marked), created on first use. Takes a lock
// and may allocate: called by nvtxDomainCreate and nvtxDomainRegisterString, never by a range.
// Past kMaxInternedNames distinct texts every new one gets the same "(too many NVTX names)"
// entry, so a program inventing names forever cannot grow the table forever.
const InternedName* intern_name(const char* s, size_t n) noexcept;
const InternedName* intern_name(const char* s) noexcept;
const InternedName* intern_name(const wchar_t* s) noexcept;
inline constexpr size_t kMaxInternedNames = 65536;

// One range event (or thread name) as the hot path has it.
struct RangeEvent {
  HostKind kind = HostKind::kRange;
  uint8_t type = 0;    // gpuhook::v1::RangeType
  uint8_t source = 0;  // 0 NVTX, 1 gpuhook.h
  const InternedName* domain = nullptr;      // nullptr = the global domain
  const InternedName* registered = nullptr;  // set: the name is this registered string
  const char* name = nullptr;  // name_bytes bytes, not necessarily NUL-terminated
  size_t name_bytes = 0;       // at most kMaxNameBytes
  bool name_cut = false;       // the caller already cut the name
  uint32_t color = 0;          // ARGB, 0 = none
  uint32_t category = 0;
  uint64_t range_id = 0;
  uint64_t thread_id = 0;
  uint64_t time_ns = 0;
};

// Writes e into the calling thread's ring: one record, followed by the kNameMore records of a
// name longer than kInlineNameBytes, all published together. When the ring has no room for
// the continuations, one record keeps what fits, marked as cut. No lock, no allocation.
void write_range_event(const RangeEvent& e);

}  // namespace gpuhook::hook
