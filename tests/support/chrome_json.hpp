// A tiny JSON reader for the Chrome export in tests: checks the syntax of the
// whole text and collects each trace event's scalar fields (strings
// unescaped only for plain ASCII). Shared by the tools' tests and the
// agreement test (tests/analysis).
#pragma once

#include <cctype>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fiberscope::testing {

struct JsonEvent {
    std::map<std::string, std::string> fields; // top-level scalars, as text (strings without quotes)
};

struct JsonChecker {
    const std::string& text;
    std::size_t i = 0;
    std::string error = {};

    bool fail(const std::string& what) {
        if (error.empty()) error = what + " at offset " + std::to_string(i);
        return false;
    }
    void space() {
        while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    }
    bool literal(const char* word) {
        const std::string w = word;
        if (text.compare(i, w.size(), w) != 0) return fail("expected " + w);
        i += w.size();
        return true;
    }
    bool string(std::string& out) {
        if (i >= text.size() || text[i] != '"') return fail("expected a string");
        ++i;
        while (i < text.size() && text[i] != '"') {
            const auto c = static_cast<unsigned char>(text[i]);
            if (c < 0x20) return fail("control character in a string");
            if (c == '\\') {
                if (++i >= text.size()) return fail("string ends in an escape");
                const char e = text[i];
                if (e == 'u') {
                    for (int k = 1; k <= 4; ++k)
                        if (i + k >= text.size() || !std::isxdigit(static_cast<unsigned char>(text[i + k])))
                            return fail("bad \\u escape");
                    out += '?';
                    i += 5;
                    continue;
                }
                if (std::string("\"\\/bfnrt").find(e) == std::string::npos) return fail("bad escape");
                out += e;
                ++i;
                continue;
            }
            out += static_cast<char>(c);
            ++i;
        }
        if (i >= text.size()) return fail("unterminated string");
        ++i;
        return true;
    }
    bool number(std::string& out) {
        const std::size_t start = i;
        if (i < text.size() && text[i] == '-') ++i;
        while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.' || text[i] == 'e' ||
                                   text[i] == 'E' || text[i] == '+' || text[i] == '-'))
            ++i;
        if (i == start) return fail("expected a value");
        out = text.substr(start, i - start);
        return true;
    }
    // Any value; scalars are returned in `scalar`.
    bool value(std::string& scalar) {
        space();
        if (i >= text.size()) return fail("text ends early");
        const char c = text[i];
        if (c == '{') return object(nullptr);
        if (c == '[') return array(nullptr);
        if (c == '"') return string(scalar);
        if (c == 't') return literal("true");
        if (c == 'f') return literal("false");
        if (c == 'n') return literal("null");
        return number(scalar);
    }
    bool object(JsonEvent* event) {
        ++i; // '{'
        space();
        if (i < text.size() && text[i] == '}') return ++i, true;
        for (;;) {
            space();
            std::string key, scalar;
            if (!string(key)) return false;
            space();
            if (i >= text.size() || text[i] != ':') return fail("expected ':'");
            ++i;
            if (!value(scalar)) return false;
            if (event) event->fields[key] = scalar;
            space();
            if (i < text.size() && text[i] == ',') {
                ++i;
                continue;
            }
            if (i < text.size() && text[i] == '}') return ++i, true;
            return fail("expected ',' or '}'");
        }
    }
    bool array(std::vector<JsonEvent>* events) {
        ++i; // '['
        space();
        if (i < text.size() && text[i] == ']') return ++i, true;
        for (;;) {
            space();
            if (events) {
                if (i >= text.size() || text[i] != '{') return fail("expected an event object");
                events->emplace_back();
                if (!object(&events->back())) return false;
            } else {
                std::string scalar;
                if (!value(scalar)) return false;
            }
            space();
            if (i < text.size() && text[i] == ',') {
                ++i;
                continue;
            }
            if (i < text.size() && text[i] == ']') return ++i, true;
            return fail("expected ',' or ']'");
        }
    }
    // The whole document: {"traceEvents":[...], ...}.
    bool document(std::vector<JsonEvent>& events) {
        space();
        if (!literal("{")) return false;
        for (bool first = true;; first = false) {
            space();
            if (!first) {
                if (i < text.size() && text[i] == '}') break;
                if (!literal(",")) return false;
                space();
            }
            std::string key, scalar;
            if (!string(key)) return false;
            space();
            if (!literal(":")) return false;
            space();
            if (key == "traceEvents") {
                if (i >= text.size() || text[i] != '[') return fail("traceEvents is not an array");
                if (!array(&events)) return false;
            } else if (!value(scalar)) {
                return false;
            }
        }
        ++i;
        space();
        if (i != text.size()) return fail("text after the document");
        return true;
    }
};

// A time field (microseconds with three decimals) in nanoseconds.
inline std::int64_t nanoseconds(const JsonEvent& e, const char* key) { return std::llround(std::stod(e.fields.at(key)) * 1000); }

} // namespace fiberscope::testing
