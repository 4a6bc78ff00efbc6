// Text from a trace on its way to a terminal. A trace is input like any
// other: a fiber name, a mark label or the recorded command line can hold
// escape sequences that would make the terminal write the clipboard (OSC 52),
// retitle itself or type into stdin (CSI 6n). So every byte that is not
// printable text is shown as an escape instead, and the result is plain
// ASCII and valid UTF-8 whatever the input was.
#include <cstdio>

#include "trace_tools.hpp"

namespace fiberscope::trace {

namespace {

void appendHex(std::string& out, unsigned byte) {
    char text[8];
    std::snprintf(text, sizeof text, "\\x%02x", byte & 0xFFu);
    out += text;
}

// The length of the well-formed UTF-8 sequence at `s[i]` (2 to 4), or 0.
std::size_t utf8Length(std::string_view s, std::size_t i) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    std::size_t n;
    std::uint32_t min;
    std::uint32_t cp;
    if (b0 >= 0xC2 && b0 <= 0xDF) n = 2, min = 0x80, cp = b0 & 0x1F;
    else if (b0 >= 0xE0 && b0 <= 0xEF) n = 3, min = 0x800, cp = b0 & 0x0F;
    else if (b0 >= 0xF0 && b0 <= 0xF4) n = 4, min = 0x10000, cp = b0 & 0x07;
    else return 0;
    if (i + n > s.size()) return 0;
    for (std::size_t k = 1; k < n; ++k) {
        const auto b = static_cast<unsigned char>(s[i + k]);
        if ((b & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (b & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    // C1 controls (U+0080..U+009F) act like ESC sequences on some terminals.
    if (cp <= 0x9F) return 0;
    return n;
}

} // namespace

std::string terminalSafe(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c >= 0x20 && c < 0x7F) {
            if (c == '\\') out += '\\';
            out += static_cast<char>(c);
            ++i;
        } else if (const std::size_t n = c >= 0x80 ? utf8Length(text, i) : 0) {
            out.append(text.substr(i, n));
            i += n;
        } else {
            appendHex(out, c);
            ++i;
        }
    }
    return out;
}

} // namespace fiberscope::trace
