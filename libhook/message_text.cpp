#include "message_text.h"

#include <cstdint>

namespace gpuhook::hook {
namespace {

// The length of the valid UTF-8 character at text[i] (RFC 3629: no overlong form, no
// surrogate, nothing past U+10FFFF), 0 when there is none.
size_t utf8_length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t b = byte(i);
  size_t n = 0;
  uint8_t lo = 0x80, hi = 0xbf;  // the range of the second byte
  if (b >= 0xc2 && b <= 0xdf) n = 2;
  else if (b == 0xe0) n = 3, lo = 0xa0;
  else if (b == 0xed) n = 3, hi = 0x9f;
  else if (b >= 0xe1 && b <= 0xef) n = 3;
  else if (b == 0xf0) n = 4, lo = 0x90;
  else if (b >= 0xf1 && b <= 0xf3) n = 4;
  else if (b == 0xf4) n = 4, hi = 0x8f;
  else return 0;
  if (i + n > text.size() || byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return 0;
  return n;
}

// Appends the escaped text up to kShownChars characters; false when it had to cut.
bool append_escaped(std::string_view text, std::string* out) {
  static const char kHex[] = "0123456789abcdef";
  size_t chars = 0;
  for (size_t i = 0; i < text.size();) {
    const uint8_t b = static_cast<uint8_t>(text[i]);
    std::string piece;
    if (b >= 0x20 && b < 0x7f && b != '\\') {
      piece.assign(1, static_cast<char>(b));
      i += 1;
    } else if (b == '\\') {
      piece = "\\\\";
      i += 1;
    } else if (const size_t n = b >= 0x80 ? utf8_length(text, i) : 0; n != 0) {
      piece.assign(text.substr(i, n));
      i += n;
    } else {
      piece = {'\\', 'x', kHex[b >> 4], kHex[b & 15]};
      i += 1;
    }
    const size_t piece_chars = piece.size() > 1 && static_cast<uint8_t>(piece[0]) >= 0x80 ? 1 : piece.size();
    if (chars + piece_chars > kShownChars) return false;
    chars += piece_chars;
    *out += piece;
  }
  return true;
}

}  // namespace

std::string shown(std::string_view text) {
  std::string out;
  if (!append_escaped(text, &out)) out += "\u2026 (" + std::to_string(text.size()) + " bytes)";
  return out;
}

std::string quoted(std::string_view text) {
  std::string out = "'";
  const bool whole = append_escaped(text, &out);
  out += whole ? "'" : "\u2026' (" + std::to_string(text.size()) + " bytes)";
  return out;
}

}  // namespace gpuhook::hook
