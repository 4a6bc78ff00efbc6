#include "cli/values.hpp"

#include <sys/stat.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>

namespace fiberscope::cli {

namespace {

std::string quoted(std::string_view text) { return "\"" + printable(text) + "\""; }

// 2^63 as a double: every finite double below it in magnitude rounds to an
// int64 without overflow (the largest double below 2^63 is 2^63 - 1024).
constexpr double kInt64Limit = 9223372036854775808.0;

constexpr const char* kTimeExample = "(use e.g. 3ms, 250us, 1.5s)";

} // namespace

std::string printable(std::string_view text, std::size_t limit) {
    static const char kHex[] = "0123456789abcdef";
    std::string out;
    for (std::size_t i = 0; i < text.size() && i < limit; ++i) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        if (c < 0x20 || c == 0x7F) out += {'\\', 'x', kHex[c >> 4], kHex[c & 15]};
        else out += static_cast<char>(c);
    }
    if (text.size() > limit) out += "...";
    return out;
}

bool parseWholeNumber(std::string_view text, std::int64_t min, std::int64_t max, std::int64_t& value, std::string& error) {
    const auto range = [&] { return " (use " + std::to_string(min) + " to " + std::to_string(max) + ")"; };
    std::int64_t parsed = 0;
    const char* end = text.data() + text.size();
    // from_chars takes no sign '+', no spaces and no base prefix: exactly the
    // strictness wanted here.
    const auto [ptr, ec] = std::from_chars(text.data(), end, parsed);
    if (text.empty() || ptr != end || (ec != std::errc{} && ec != std::errc::result_out_of_range)) {
        error = quoted(text) + " is not a whole number" + range();
        return false;
    }
    if (ec == std::errc::result_out_of_range || parsed < min || parsed > max) {
        error = quoted(text) + " is out of range" + range();
        return false;
    }
    value = parsed;
    return true;
}

bool parseTime(std::string_view text, TimeSign sign, std::int64_t& ns, std::string& error) {
    double number = 0;
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, number, std::chars_format::general);
    if (text.empty() || ptr == text.data() || (ec != std::errc{} && ec != std::errc::result_out_of_range)) {
        error = quoted(text) + " is not a duration " + kTimeExample;
        return false;
    }
    const std::string_view unit(ptr, static_cast<std::size_t>(end - ptr));
    double scale = 0;
    if (unit.empty() || unit == "ms") scale = 1e6;
    else if (unit == "ns") scale = 1;
    else if (unit == "us") scale = 1e3;
    else if (unit == "s") scale = 1e9;
    else {
        error = quoted(text) + " is not a duration " + kTimeExample;
        return false;
    }
    if (!std::isfinite(number)) {
        error = quoted(text) + " is not a finite time " + kTimeExample;
        return false;
    }
    const double value = std::round(number * scale);
    // from_chars reports a value beyond double's range (1e400) as out of
    // range; below it, the scaled value may still not fit in int64.
    if (ec == std::errc::result_out_of_range || !(std::fabs(value) < kInt64Limit)) {
        error = quoted(text) + " is out of range (at most about 292 years, 9.2e18ns)";
        return false;
    }
    if (sign == TimeSign::positive && !(value > 0)) {
        error = quoted(text) + " is not a positive duration " + kTimeExample;
        return false;
    }
    if (sign == TimeSign::non_negative && value < 0) {
        error = quoted(text) + " is before the start of the trace (use a time >= 0, e.g. 3ms)";
        return false;
    }
    ns = static_cast<std::int64_t>(value);
    return true;
}

bool parseTimeRange(std::string_view text, std::int64_t& start_ns, std::int64_t& end_ns, std::string& error) {
    const std::size_t colon = text.find(':');
    if (colon == std::string_view::npos || text.find(':', colon + 1) != std::string_view::npos) {
        error = quoted(text) + " is not a range START:END (use e.g. 2ms:5ms)";
        return false;
    }
    std::int64_t start = 0, end = 0;
    std::string part_error;
    if (!parseTime(text.substr(0, colon), TimeSign::any, start, part_error) ||
        !parseTime(text.substr(colon + 1), TimeSign::any, end, part_error)) {
        error = "in " + quoted(text) + ": " + part_error;
        return false;
    }
    if (start >= end) {
        error = quoted(text) + " does not end after it starts (use START:END with START < END, e.g. 2ms:5ms)";
        return false;
    }
    // end - start must fit too: the view's width is computed from it.
    if (start < 0 && end > std::numeric_limits<std::int64_t>::max() + start) {
        error = quoted(text) + " is too wide (at most about 292 years, 9.2e18ns)";
        return false;
    }
    start_ns = start;
    end_ns = end;
    return true;
}

bool parseSize(std::string_view text, int min, int max, int& width, int& height, std::string& error) {
    const std::string example = " (use WIDTHxHEIGHT, e.g. 1600x900, each " + std::to_string(min) + " to " +
                                std::to_string(max) + ")";
    const std::size_t x = text.find('x');
    std::int64_t w = 0, h = 0;
    std::string part_error;
    if (x == std::string_view::npos || !parseWholeNumber(text.substr(0, x), 0, max, w, part_error) ||
        !parseWholeNumber(text.substr(x + 1), 0, max, h, part_error) || w < min || h < min) {
        // One message for every way of getting it wrong: the rule is short.
        error = quoted(text) + " is not a size" + example;
        return false;
    }
    width = static_cast<int>(w);
    height = static_cast<int>(h);
    return true;
}

bool sameFile(const std::string& a, const std::string& b) {
    struct stat sa {}, sb {};
    return stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

} // namespace fiberscope::cli
