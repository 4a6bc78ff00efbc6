#include "lessons/tour.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace fiberscope::viewer::tour {

namespace {

constexpr std::string_view kCheckpoint = "checkpoint: ";

std::vector<std::string> words(std::string_view text) {
    std::vector<std::string> out;
    std::size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
        std::size_t j = i;
        while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j]))) ++j;
        if (j > i) out.emplace_back(text.substr(i, j - i));
        i = j;
    }
    return out;
}

int fieldNamed(const trace::RecordKindInfo& info, std::string_view name) {
    for (int f = 0; f < info.field_count; ++f)
        if (name == info.fields[f].name) return f;
    return -1;
}

int enumValue(const trace::FieldInfo& field, std::string_view name) {
    if (field.type != trace::FieldType::Enum || !field.values) return -1;
    for (std::uint64_t v = 0; v <= field.max; ++v)
        if (field.values[v] && name == field.values[v]) return static_cast<int>(v);
    return -1;
}

bool isNumber(std::string_view s) {
    if (s.empty()) return false;
    std::size_t i = s[0] == '-' ? 1 : 0;
    if (i == s.size()) return false;
    for (; i < s.size(); ++i)
        if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
    return true;
}

// A value written as a name of the field's values would be: lowercase
// letters and dashes (not a placeholder such as N or F, a number, "…").
bool looksLikeName(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
        if (!(std::islower(static_cast<unsigned char>(c)) || c == '-')) return false;
    return true;
}

// `kind field=value ...` (field values that are names or numbers become
// matches; placeholders are ignored). False if `tokens[0]` is no kind.
bool parseKindSnippet(const std::vector<std::string>& tokens, RecordRef& ref) {
    if (tokens.empty()) return false;
    const trace::RecordKindInfo* info = trace::recordKindNamed(tokens[0]);
    if (!info) return false;
    ref.kind = info->kind;
    for (std::size_t t = 1; t < tokens.size(); ++t) {
        const std::size_t eq = tokens[t].find('=');
        if (eq == std::string::npos) continue;
        const int field = fieldNamed(*info, std::string_view(tokens[t]).substr(0, eq));
        if (field < 0) continue;
        const std::string value = tokens[t].substr(eq + 1);
        // Values as `records` prints them: a WorkerPlusOne field (a
        // cancel-request's target) names the worker, or none.
        const bool plus_one = info->fields[field].type == trace::FieldType::WorkerPlusOne;
        if (const int v = enumValue(info->fields[field], value); v >= 0)
            ref.fields.push_back({field, static_cast<std::uint64_t>(v)});
        else if (plus_one && value == "none")
            ref.fields.push_back({field, 0});
        else if (plus_one && isNumber(value) && value[0] != '-')
            ref.fields.push_back({field, static_cast<std::uint64_t>(std::strtoll(value.c_str(), nullptr, 10)) + 1});
        else if (isNumber(value) && !plus_one && info->fields[field].type != trace::FieldType::Enum)
            ref.fields.push_back({field, static_cast<std::uint64_t>(std::strtoll(value.c_str(), nullptr, 10))});
    }
    return true;
}

// `field=value` or a bare `value` that exactly one kind's enumerated field
// has (`how=idle-handoff`, `idle-handoff`, `reason=select`).
bool parseValueSnippet(const std::string& token, RecordRef& ref) {
    const std::size_t eq = token.find('=');
    const std::string_view field_name = eq == std::string::npos ? std::string_view() : std::string_view(token).substr(0, eq);
    const std::string_view value = eq == std::string::npos ? std::string_view(token) : std::string_view(token).substr(eq + 1);
    if (!looksLikeName(value)) return false;
    int found = 0;
    for (unsigned k = 1; k <= trace::kMaxEventKind; ++k) {
        const trace::RecordKindInfo& info = trace::kRecordKinds[k];
        if (!info.name || info.special) continue;
        for (int f = 0; f < info.field_count; ++f) {
            if (!field_name.empty() && field_name != info.fields[f].name) continue;
            if (const int v = enumValue(info.fields[f], value); v >= 0) {
                ++found;
                ref.kind = info.kind;
                ref.fields = {{f, static_cast<std::uint64_t>(v)}};
            }
        }
    }
    return found == 1;
}

// The code spans of a text.
std::vector<std::string> codeSpans(std::string_view text) {
    std::vector<std::string> spans;
    std::size_t i = 0;
    while ((i = text.find('`', i)) != std::string_view::npos) {
        const std::size_t j = text.find('`', i + 1);
        if (j == std::string_view::npos) break;
        spans.emplace_back(text.substr(i + 1, j - i - 1));
        i = j + 1;
    }
    return spans;
}

// The text with its Markdown marks taken out: code ticks, emphasis, links' targets.
std::string plain(std::string_view text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '`' || c == '*') continue;
        if (c == ']' && i + 1 < text.size() && text[i + 1] == '(') { // [text](target): keep the text
            const std::size_t close = text.find(')', i + 1);
            if (close != std::string_view::npos) {
                i = close;
                continue;
            }
        }
        if (c == '[') continue;
        out += c;
    }
    return out;
}

// Sentences of a paragraph: split after '.', '?' or '!' followed by a space,
// outside code spans, not after "e.g" or "i.e".
std::vector<std::string> sentences(const std::string& paragraph) {
    std::vector<std::string> out;
    bool code = false;
    std::size_t begin = 0;
    for (std::size_t i = 0; i < paragraph.size(); ++i) {
        const char c = paragraph[i];
        if (c == '`') code = !code;
        if (code || (c != '.' && c != '?' && c != '!')) continue;
        std::size_t end = i + 1; // past the closing emphasis of "**After X.**"
        while (end < paragraph.size() && paragraph[end] == '*') ++end;
        if (end < paragraph.size() && paragraph[end] != ' ') continue;
        if (i >= 3 && (paragraph.compare(i - 3, 3, "e.g") == 0 || paragraph.compare(i - 3, 3, "i.e") == 0)) continue;
        out.push_back(paragraph.substr(begin, end - begin));
        begin = end;
        i = end - 1;
    }
    if (begin < paragraph.size()) out.push_back(paragraph.substr(begin));
    for (auto& s : out) {
        const std::size_t a = s.find_first_not_of(' ');
        s = a == std::string::npos ? "" : s.substr(a);
    }
    out.erase(std::remove(out.begin(), out.end(), ""), out.end());
    return out;
}

struct Paragraph {
    int line = 0;
    std::string text;
    std::string backend; // of its "###" section
};

bool startsItem(const std::string& line) {
    const std::size_t a = line.find_first_not_of(' ');
    if (a == std::string::npos) return false;
    if (line.compare(a, 2, "- ") == 0 || line.compare(a, 2, "* ") == 0) return true;
    std::size_t d = a;
    while (d < line.size() && std::isdigit(static_cast<unsigned char>(line[d]))) ++d;
    return d > a && line.compare(d, 2, ". ") == 0;
}

std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::size_t i = 0;
    while (i <= text.size()) {
        const std::size_t j = text.find('\n', i);
        out.push_back(text.substr(i, j == std::string::npos ? std::string::npos : j - i));
        if (j == std::string::npos) break;
        i = j + 1;
    }
    return out;
}

std::string lowered(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
    return text;
}

bool isFence(const std::string& line) { return line.find_first_not_of(' ') != std::string::npos && line.compare(line.find_first_not_of(' '), 3, "```") == 0; }

} // namespace

std::vector<Stop> parseTour(const std::string& markdown) {
    const std::vector<std::string> all = lines(markdown);
    std::size_t from = 0;
    for (std::size_t i = 0; i < all.size(); ++i) {
        const std::string lower = lowered(all[i]);
        if (lower.rfind("## ", 0) == 0 && lower.find("look for") != std::string::npos) {
            from = i + 1;
            break;
        }
    }
    std::vector<Paragraph> paragraphs;
    bool fenced = false, open = false;
    std::string backend; // of the "###" section we are in
    for (std::size_t i = from; i < all.size(); ++i) {
        const std::string& line = all[i];
        // "Try this" suggests other runs (another thread count, a change to
        // the program): its sentences are not about the trace on screen.
        if (!fenced && lowered(line).rfind("## try this", 0) == 0) break;
        if (!fenced && line.rfind("##", 0) == 0) {
            const std::string heading = lowered(line);
            backend = heading.rfind("### ", 0) != 0                      ? ""
                      : heading.find("io_uring") != std::string::npos ? "io_uring"
                      : heading.find("epoll") != std::string::npos    ? "epoll"
                                                                       : "";
        }
        if (isFence(line)) {
            fenced = !fenced;
            open = false;
            continue;
        }
        if (fenced) continue;
        const bool blank = line.find_first_not_of(' ') == std::string::npos;
        if (blank || line.rfind("#", 0) == 0) {
            open = false;
            continue;
        }
        if (!open || startsItem(line)) {
            paragraphs.push_back({static_cast<int>(i) + 1, "", backend});
            open = true;
        }
        std::string body = line.substr(line.find_first_not_of(' '));
        if (startsItem(line)) body = body.substr(body.find(' ') + 1);
        paragraphs.back().text += (paragraphs.back().text.empty() ? "" : " ") + body;
    }
    std::vector<Stop> stops;
    std::string checkpoint;
    for (const Paragraph& p : paragraphs) {
        for (const std::string& s : sentences(p.text)) {
            Stop stop;
            stop.line = p.line;
            bool named = false;
            for (const std::string& span : codeSpans(s)) {
                if (span.rfind(kCheckpoint, 0) == 0) {
                    // The first a sentence names: "From `A` to `B`" is A's
                    // story (its window runs to B), as are the sentences after.
                    if (!named) checkpoint = span;
                    named = true;
                    continue;
                }
                const std::vector<std::string> tokens = words(span);
                RecordRef ref;
                ref.text = span;
                if (parseKindSnippet(tokens, ref) || (tokens.size() == 1 && parseValueSnippet(tokens[0], ref)))
                    stop.records.push_back(ref);
            }
            if (!named && stop.records.empty()) continue;
            stop.checkpoint = checkpoint;
            stop.backend = p.backend;
            stop.sentence = plain(s);
            stops.push_back(std::move(stop));
        }
    }
    return stops;
}

std::vector<std::string> snippetFindings(const std::string& markdown, const std::string& file) {
    std::vector<std::string> findings;
    const std::vector<std::string> all = lines(markdown);
    const auto check = [&](const std::string& snippet, std::size_t line) {
        const std::vector<std::string> tokens = words(snippet);
        if (tokens.empty()) return;
        const trace::RecordKindInfo* info = trace::recordKindNamed(tokens[0]);
        if (!info) return;
        for (std::size_t t = 1; t < tokens.size(); ++t) {
            const std::size_t eq = tokens[t].find('=');
            if (eq == std::string::npos || eq == 0) continue;
            const std::string name = tokens[t].substr(0, eq), value = tokens[t].substr(eq + 1);
            const std::string where = file + ":" + std::to_string(line + 1) + ": ";
            const int field = fieldNamed(*info, name);
            if (field < 0) {
                std::string list;
                for (int f = 0; f < info->field_count; ++f) list += (f ? ", " : "") + std::string(info->fields[f].name);
                findings.push_back(where + info->name + " has no field '" + name + "' (its fields: " +
                                   (list.empty() ? "none" : list) + ")");
                continue;
            }
            const trace::FieldInfo& f = info->fields[field];
            if (f.type == trace::FieldType::Enum && looksLikeName(value) && enumValue(f, value) < 0) {
                std::string list;
                for (std::uint64_t v = 0; v <= f.max; ++v) list += (v ? ", " : "") + std::string(f.values[v] ? f.values[v] : "?");
                findings.push_back(where + info->name + "'s " + name + " is never '" + value + "' (it is one of " + list + ")");
            }
        }
    };
    bool fenced = false;
    for (std::size_t i = 0; i < all.size(); ++i) {
        if (isFence(all[i])) {
            fenced = !fenced;
            continue;
        }
        if (fenced) check(all[i], i);
        else
            for (const std::string& span : codeSpans(all[i])) check(span, i);
    }
    return findings;
}

bool matches(const RecordRef& ref, const trace::Event& e) noexcept {
    if (e.kind != ref.kind) return false;
    for (const RecordRef::Match& m : ref.fields)
        if (trace::fieldValue(e, m.field) != m.value) return false;
    return true;
}

std::vector<std::uint32_t> recordsOf(const Stop& stop, const trace::Trace& trace, std::size_t first, std::size_t last,
                                     std::size_t limit) {
    std::vector<std::uint32_t> out;
    if (stop.records.empty()) return out;
    last = std::min(last, trace.events.size());
    for (std::size_t i = first; i < last && out.size() < limit; ++i) {
        const trace::Event e = trace.events[i];
        for (const RecordRef& ref : stop.records)
            if (matches(ref, e)) {
                out.push_back(static_cast<std::uint32_t>(i));
                break;
            }
    }
    return out;
}

} // namespace fiberscope::viewer::tour
