// NVTX names on their way into records: UTF-8 from wide strings, the length limit, and the
// process-wide table of domain names and registered strings.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cstring>

#include "host_record.h"  // kMaxNameBytes, kCutMarker
#include "recorder.h"

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
// Inline: it runs on every NVTX push, pop and mark, where the event is built field by field.
[[gnu::always_inline]] inline void write_range_event(const RangeEvent& e) {
  size_t n = e.registered != nullptr || e.name == nullptr ? 0 : e.name_bytes;
  if (n > kMaxNameBytes) n = kMaxNameBytes;  // callers cut first; this only guards the record
  bool cut = e.name_cut;
  uint32_t more = n <= kInlineNameBytes ? 0 : static_cast<uint32_t>((n - kInlineNameBytes + kMoreNameBytes - 1) / kMoreNameBytes);
  HostRecord* r;
  if (more == 0) {
    r = begin_record();
  } else {
    r = begin_records(1 + more);
    if (r == nullptr) {
      // No room for the continuations now: what fits one record is kept, marked as cut.
      more = 0;
      n = utf8_prefix(e.name, kInlineNameBytes);
      cut = true;
      r = begin_record();
    }
  }
  if (r == nullptr) return;
  r->kind = e.kind;
  r->thread_id = e.thread_id;
  r->start_ns = e.time_ns;
  r->end_ns = 0;
  RangePayload& p = r->range;
  p.domain = e.domain;
  p.registered_name = e.registered;
  p.range_id = e.range_id;
  p.color = e.color;
  p.category = e.category;
  p.type = e.type;
  p.source = e.source;
  p.name_bytes = static_cast<uint8_t>(n < kInlineNameBytes ? n : kInlineNameBytes);
  p.name_truncated = cut ? 1 : 0;
  p.name_total_bytes = static_cast<uint16_t>(n);
  p.more_records = static_cast<uint16_t>(more);
  if (p.name_bytes != 0) std::memcpy(p.name, e.name, p.name_bytes);
  for (uint32_t i = 1; i <= more; ++i) {
    HostRecord* c = reserved_record(i);
    c->kind = HostKind::kNameMore;
    c->thread_id = e.thread_id;
    c->start_ns = e.time_ns;
    c->end_ns = 0;
    size_t offset = kInlineNameBytes + (i - 1) * kMoreNameBytes;
    size_t len = n - offset < kMoreNameBytes ? n - offset : kMoreNameBytes;
    std::memcpy(c->name_more.text, e.name + offset, len);
  }
  if (more == 0) end_record();
  else end_records(1 + more);
}

}  // namespace gpuhook::hook
