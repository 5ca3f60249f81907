#include "nvtx_names.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <cwchar>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <unordered_map>


namespace gpuhook::hook {

static_assert(sizeof(wchar_t) == 4, "wchar_t is UTF-32 on Linux; utf8_from_wide relies on it");

size_t utf8_prefix(const char* s, size_t n) {
  // s[n] is the first byte left out: while it continues a character, that character
  // straddles the cut and goes too (at most three bytes back).
  size_t back = 0;
  while (n > 0 && back < 3 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) {
    --n;
    ++back;
  }
  return n;
}

size_t utf8_from_wide(const wchar_t* w, char* out, size_t cap, bool* cut) {
  *cut = false;
  size_t n = 0;
  if (w != nullptr) {
    for (; *w != L'\0'; ++w) {
      uint32_t c = static_cast<uint32_t>(*w);
      if ((c >= 0xD800 && c <= 0xDFFF) || c > 0x10FFFF) c = 0xFFFD;
      char enc[4];
      size_t len;
      if (c < 0x80) {
        enc[0] = static_cast<char>(c);
        len = 1;
      } else if (c < 0x800) {
        enc[0] = static_cast<char>(0xC0 | (c >> 6));
        enc[1] = static_cast<char>(0x80 | (c & 0x3F));
        len = 2;
      } else if (c < 0x10000) {
        enc[0] = static_cast<char>(0xE0 | (c >> 12));
        enc[1] = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        enc[2] = static_cast<char>(0x80 | (c & 0x3F));
        len = 3;
      } else {
        enc[0] = static_cast<char>(0xF0 | (c >> 18));
        enc[1] = static_cast<char>(0x80 | ((c >> 12) & 0x3F));
        enc[2] = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        enc[3] = static_cast<char>(0x80 | (c & 0x3F));
        len = 4;
      }
      if (n + len + 1 > cap) {
        *cut = true;
        break;
      }
      std::memcpy(out + n, enc, len);
      n += len;
    }
  }
  if (cap > 0) out[n] = '\0';
  return n;
}

namespace {

// Domain and registered-string names, one entry per distinct text. The lock is taken only by
// nvtxDomainCreate and nvtxDomainRegisterString (never by a range event, never by the writer,
// which reads an entry's text through the record); no other lock is taken under it.
struct NameTable {
  std::mutex mutex;
  std::unordered_map<std::string_view, InternedName*> by_text;  // keys point into the entries
  InternedName too_many{"(too many NVTX names)"};
};

NameTable& table() {
  static NameTable* t = new NameTable;  // never destroyed: records may name entries until exit
  return *t;
}

}  // namespace

const InternedName* intern_name(const char* s, size_t n) noexcept {
  if (s == nullptr) n = 0;
  bool cut = n > kMaxNameBytes;
  if (cut) n = utf8_prefix(s, kMaxNameBytes);
  NameTable& t = table();
  try {
    std::string key(s != nullptr ? s : "", n);
    if (cut) key += kCutMarker;
    std::lock_guard<std::mutex> lock(t.mutex);
    auto it = t.by_text.find(key);
    if (it != t.by_text.end()) return it->second;
    if (t.by_text.size() >= kMaxInternedNames) return &t.too_many;
    // One block: the entry, then its text.
    auto* block = static_cast<char*>(std::malloc(sizeof(InternedName) + key.size() + 1));
    if (block == nullptr) return &t.too_many;
    char* text = block + sizeof(InternedName);
    std::memcpy(text, key.data(), key.size());
    text[key.size()] = '\0';
    auto* entry = new (block) InternedName{text};
    t.by_text.emplace(std::string_view(text, key.size()), entry);
    return entry;
  } catch (...) {
    return &t.too_many;  // out of memory: the app runs on, the name is lost
  }
}

const InternedName* intern_name(const char* s) noexcept {
  return intern_name(s, s != nullptr ? std::strlen(s) : 0);
}

const InternedName* intern_name(const wchar_t* s) noexcept {
  // Not a hot path (domain creation), but kept off the heap like the range path.
  char buf[kMaxNameBytes + 8];
  bool cut = false;
  size_t n = utf8_from_wide(s, buf, sizeof(buf), &cut);
  // A wide name past the limit converts to more than kMaxNameBytes, so the char overload cuts
  // and marks it.
  return intern_name(buf, n);
}

}  // namespace gpuhook::hook
