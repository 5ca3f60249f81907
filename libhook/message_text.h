// Text from outside the hook (a setting's value, a path made from one, a library path) as a
// `gpuhook:` line shows it: a 5,000-byte GPUHOOK_OUTPUT came back as a 10 KB line, and a value
// that is not UTF-8 came back raw (issue 44). Nothing here is on a hot path.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpuhook::hook {

// The most characters of outside text one message shows.
inline constexpr size_t kShownChars = 200;

// `text` escaped: valid UTF-8 stays as it is; a byte that is not (or a control character, DEL,
// a backslash) becomes \xNN (\\ for the backslash), so the line stays one line of UTF-8. Cut
// at kShownChars characters of the escaped text, never inside an escape or a character; a cut
// text ends in "…" and says its whole length: "aaaa… (5000 bytes)".
std::string shown(std::string_view text);
// The same between single quotes, the length after them: 'aaaa…' (5000 bytes).
std::string quoted(std::string_view text);

}  // namespace gpuhook::hook
