// The values the `fiberscope` command line takes, parsed strictly: a whole
// string or nothing (no trailing junk, no wraparound, no NaN or infinity),
// each failure described in words a user can act on.
//
// Times: a number and a unit, ns, us, ms or s ("3ms", "250us", "1.5s",
// "20ns"). A bare number is milliseconds, as the screenshot options have
// always read it ("--range 0:20" is 0 to 20 ms). Every time must be a whole
// number of nanoseconds that fits in an int64 once rounded.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace fiberscope::cli {

// Each parser returns true and sets the value, or returns false and sets
// `error` to a phrase about the text alone, such as "\"3parsecs\" is not a
// duration (use e.g. 3ms, 250us)"; the caller prefixes the option's name.

// A decimal integer in [min, max].
bool parseWholeNumber(std::string_view text, std::int64_t min, std::int64_t max, std::int64_t& value, std::string& error);

enum class TimeSign {
    positive,     // a duration, > 0 (a bucket width)
    non_negative, // an instant in the trace, >= 0 (a cursor)
    any,          // one end of a view, which may start before the trace does
};

// A time with a unit (bare: milliseconds), in nanoseconds.
bool parseTime(std::string_view text, TimeSign sign, std::int64_t& ns, std::string& error);

// "START:END", both times, START < END, END - START representable in int64.
bool parseTimeRange(std::string_view text, std::int64_t& start_ns, std::int64_t& end_ns, std::string& error);

// "WIDTHxHEIGHT", each in [min, max].
bool parseSize(std::string_view text, int min, int max, int& width, int& height, std::string& error);

// Text from the command line made safe for a one-line message: control
// characters escaped (an argument may hold a newline or a terminal escape
// sequence) and anything past `limit` bytes cut to "...".
std::string printable(std::string_view text, std::size_t limit = 60);

// Whether two paths name the same existing file (same device and inode, so a
// hard link, a symlink or "./x" versus "x" all count). False when either
// does not exist.
bool sameFile(const std::string& a, const std::string& b);

} // namespace fiberscope::cli
