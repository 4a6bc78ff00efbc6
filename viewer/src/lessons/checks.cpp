// The checks.md parser and the query evaluator (checks.hpp). Queries are
// parsed once, when checks.md is read, into a small tree that names kinds
// and fields by their indices in the record table; evaluating one is a scan
// of the decoded events (a lesson's trace is small, and a Check is a click).
#include "lessons/checks.hpp"

#include "fiberscope/analysis/timeline.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <sstream>

namespace fiberscope::viewer::checks {

namespace {

using trace::EventKind;
using trace::FieldType;

struct Token {
    std::string text;
    bool quoted = false;
};

std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(" \t\r");
    if (b == std::string::npos) return "";
    const auto e = s.find_last_not_of(" \t\r");
    return s.substr(b, e - b + 1);
}

bool isOperatorChar(char c) { return c == '=' || c == '!' || c == '<' || c == '>'; }

bool tokenize(const std::string& text, const std::string& where, std::vector<Token>& out, std::string& error) {
    std::size_t i = 0;
    while (i < text.size()) {
        const char c = text[i];
        if (c == ' ' || c == '\t' || c == '\r') {
            ++i;
        } else if (c == '"') {
            const auto end = text.find('"', i + 1);
            if (end == std::string::npos) {
                error = where + ": unterminated string " + text.substr(i);
                return false;
            }
            out.push_back({text.substr(i + 1, end - i - 1), true});
            i = end + 1;
        } else if (isOperatorChar(c)) {
            std::size_t n = (i + 1 < text.size() && text[i + 1] == '=') ? 2 : 1;
            out.push_back({text.substr(i, n), false});
            i += n;
        } else {
            std::size_t j = i;
            while (j < text.size() && text[j] != ' ' && text[j] != '\t' && text[j] != '"' && !isOperatorChar(text[j])) ++j;
            out.push_back({text.substr(i, j - i), false});
            i = j;
        }
    }
    return true;
}

bool parseInteger(const std::string& text, std::int64_t& value) {
    if (text.empty()) return false;
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (errno != 0 || *end != '\0') return false;
    value = v;
    return true;
}


int fieldNamed(const trace::RecordKindInfo& info, const std::string& name) {
    for (int f = 0; f < info.field_count; ++f)
        if (name == info.fields[f].name) return f;
    return -1;
}

std::string fieldList(const trace::RecordKindInfo& info) {
    std::string list;
    for (int f = 0; f < info.field_count; ++f) list += (f ? ", " : "") + std::string(info.fields[f].name);
    return list.empty() ? "none" : list;
}

class Parser {
public:
    Parser(std::vector<Token> tokens, std::string where) : tokens_(std::move(tokens)), where_(std::move(where)) {}

    bool query(Query& q) {
        const std::size_t start = pos_;
        const std::string word = peek();
        if (word == "count") {
            ++pos_;
            q.kind = AnswerKind::Count;
            if (!selection(q.selection, true)) return false;
        } else if (word == "worker-of" || word == "fiber-of") {
            ++pos_;
            q.kind = word == "worker-of" ? AnswerKind::Worker : AnswerKind::Fiber;
            if (!eventRef(q.ref, true)) return false;
        } else {
            return fail("expected 'count', 'worker-of' or 'fiber-of'");
        }
        q.text = textOf(start, pos_);
        return true;
    }

    bool eventRef(EventRef& ref, bool with_range) {
        const std::size_t start = pos_;
        const std::string word = peek();
        if (word == "first" || word == "last") {
            ++pos_;
            ref.how = word == "first" ? EventRef::How::First : EventRef::How::Last;
            if (!selection(ref.selection, with_range)) return false;
        } else if (word == "mark" || word == "checkpoint") {
            ++pos_;
            if (atEnd() || !tokens_[pos_].quoted) return fail("expected a quoted label after '" + word + "'");
            ref.how = EventRef::How::Mark;
            ref.label = (word == "checkpoint" ? std::string("checkpoint: ") : std::string()) + tokens_[pos_++].text;
        } else {
            return fail("expected 'first', 'last', 'mark' or 'checkpoint'");
        }
        ref.text = textOf(start, pos_);
        return true;
    }

    bool expect(Expect& e) {
        const std::size_t start = pos_;
        if (!query(e.query)) return false;
        static const std::pair<const char*, Expect::Op> ops[] = {{"==", Expect::Op::Eq}, {"!=", Expect::Op::Ne},
                                                                 {">=", Expect::Op::Ge}, {"<=", Expect::Op::Le},
                                                                 {">", Expect::Op::Gt},  {"<", Expect::Op::Lt}};
        bool found = false;
        for (const auto& [name, op] : ops)
            if (!atEnd() && !tokens_[pos_].quoted && tokens_[pos_].text == name) e.op = op, found = true;
        if (!found) return fail("expected a comparison (== != >= <= > <)");
        ++pos_;
        std::int64_t n = 0;
        if (atEnd() || !parseInteger(tokens_[pos_].text, n)) return fail("expected a number to compare with");
        ++pos_;
        e.number = n;
        e.text = textOf(start, pos_);
        return true;
    }

    bool finish() { return atEnd() || fail("unexpected"); }

    const std::string& error() const { return error_; }

private:
    bool selection(Selection& s, bool with_range) {
        if (atEnd()) return fail("expected a record kind");
        const trace::RecordKindInfo* info = trace::recordKindNamed(tokens_[pos_].text);
        if (!info || tokens_[pos_].quoted) return fail("unknown record kind");
        ++pos_;
        s.kind = info->kind;
        for (;;) {
            const std::string word = peek();
            Filter f;
            if (word == "of" || word == "to") {
                ++pos_;
                if (peek() != "fiber") return fail("expected 'fiber' after '" + word + "'");
                ++pos_;
                f.what = word == "of" ? Filter::What::OfFiber : Filter::What::ToFiber;
                if (word == "to") {
                    f.field = fieldNamed(*info, "to");
                    if (f.field < 0) return fail(std::string("a ") + info->name + " record has no {} field; use 'of fiber'", pos_ - 2);
                }
                if (!unsignedNumber(f.value)) return false;
            } else if (word == "on") {
                ++pos_;
                if (peek() != "worker") return fail("expected 'worker' after 'on'");
                ++pos_;
                f.what = Filter::What::OnWorker;
                if (!unsignedNumber(f.value)) return false;
            } else if (word == "where") {
                ++pos_;
                if (!where(*info, f)) return false;
                // `where opcode=11 result=-62`: more FIELD=VALUE pairs, all of which must match.
                while (pos_ + 1 < tokens_.size() && !tokens_[pos_].quoted && tokens_[pos_ + 1].text == "=") {
                    s.filters.push_back(f);
                    f = Filter{};
                    if (!where(*info, f)) return false;
                }
            } else {
                break;
            }
            s.filters.push_back(f);
        }
        if (!with_range) return true;
        if (peek() == "after") {
            ++pos_;
            s.after = std::make_shared<EventRef>();
            if (!eventRef(*s.after, false)) return false;
        }
        if (peek() == "before") {
            ++pos_;
            s.before = std::make_shared<EventRef>();
            if (!eventRef(*s.before, false)) return false;
        }
        return true;
    }

    bool where(const trace::RecordKindInfo& info, Filter& f) {
        if (atEnd() || tokens_[pos_].quoted) return fail("expected FIELD=VALUE after 'where'");
        const std::string name = tokens_[pos_].text;
        f.what = Filter::What::Where;
        f.field = fieldNamed(info, name);
        if (f.field < 0)
            return fail(std::string("a ") + info.name + " record has no field {} (its fields: " + fieldList(info) + ")");
        const trace::FieldInfo& field = info.fields[f.field];
        if (field.type == FieldType::String || field.type == FieldType::StringId || field.type == FieldType::Length ||
            field.type == FieldType::Bytes)
            return fail("field {} is a string; only numbers and enumerated values can be matched");
        ++pos_;
        if (peek() != "=") return fail("expected '=' after '" + name + "'");
        ++pos_;
        if (atEnd()) return fail("expected a value after '" + name + "='");
        const std::string value = tokens_[pos_].text;
        if (field.type == FieldType::Enum) {
            for (unsigned v = 0; v <= field.max; ++v)
                if (value == field.values[v]) {
                    f.value = v;
                    ++pos_;
                    return true;
                }
            std::string names;
            for (unsigned v = 0; v <= field.max; ++v) names += (v ? ", " : "") + std::string(field.values[v]);
            std::int64_t n = 0;
            if (parseInteger(value, n) && n >= 0 && n <= field.max) {
                f.value = static_cast<std::uint64_t>(n);
                ++pos_;
                return true;
            }
            return fail(std::string("{} is not a value of ") + info.name + "'s " + name + " (one of: " + names + ")");
        }
        std::int64_t n = 0;
        if (!parseInteger(value, n)) return fail("expected a number for '" + name + "'");
        if (n < 0 && field.type != FieldType::Signed) return fail("field '" + name + "' is never negative");
        f.value = static_cast<std::uint64_t>(n);
        ++pos_;
        return true;
    }

    bool unsignedNumber(std::uint64_t& value) {
        std::int64_t n = 0;
        if (atEnd() || tokens_[pos_].quoted || !parseInteger(tokens_[pos_].text, n) || n < 0)
            return fail("expected a number");
        value = static_cast<std::uint64_t>(n);
        ++pos_;
        return true;
    }

    bool atEnd() const { return pos_ >= tokens_.size(); }
    std::string peek() const { return atEnd() || tokens_[pos_].quoted ? std::string() : tokens_[pos_].text; }

    std::string textOf(std::size_t from, std::size_t to) const {
        std::string text;
        for (std::size_t i = from; i < to; ++i) {
            // "how=idle-handoff" as written, without spaces around its '='.
            if (i > from && tokens_[i].text != "=" && tokens_[i - 1].text != "=") text += ' ';
            text += tokens_[i].quoted ? '"' + tokens_[i].text + '"' : tokens_[i].text;
        }
        return text;
    }

    // "where: what 'token'" for the token at `at` (default: the current
    // one): in place of "{}" in `what`, else after it (", found" after an "expected").
    bool fail(const std::string& what, std::size_t at = static_cast<std::size_t>(-1)) {
        if (at == static_cast<std::size_t>(-1)) at = pos_;
        const bool expected = what.rfind("expected", 0) == 0;
        std::string token = "the end of the line";
        if (at < tokens_.size()) {
            const Token& t = tokens_[at];
            token = "'" + (t.quoted ? '"' + t.text + '"' : t.text) + "'";
        }
        if (const auto slot = what.find("{}"); slot != std::string::npos)
            error_ = where_ + ": " + what.substr(0, slot) + token + what.substr(slot + 2);
        else
            error_ = where_ + ": " + what + (expected ? ", found " : " ") + token;
        return false;
    }

    std::vector<Token> tokens_;
    std::string where_;
    std::size_t pos_ = 0;
    std::string error_;
};

template <typename T, typename Method>
bool parseWith(const std::string& text, const std::string& where, T& out, std::string& error, Method method) {
    std::vector<Token> tokens;
    if (!tokenize(text, where, tokens, error)) return false;
    Parser parser(std::move(tokens), where);
    if (!method(parser, out) || !parser.finish()) {
        error = parser.error();
        return false;
    }
    return true;
}

std::int64_t workerOf(const trace::Trace& t, const trace::Event& e) {
    return e.thread < t.threads.size() ? t.threads[e.thread].worker : -1;
}

bool matches(const Selection& s, const trace::Trace& t, const trace::Event& e) {
    if (e.kind != s.kind) return false;
    for (const Filter& f : s.filters) {
        switch (f.what) {
        case Filter::What::OfFiber: {
            std::uint64_t fibers[3];
            const std::size_t n = trace::fiberFields(e, fibers);
            if (std::find(fibers, fibers + n, f.value) == fibers + n) return false;
            break;
        }
        case Filter::What::ToFiber:
        case Filter::What::Where:
            if (trace::fieldValue(e, f.field) != f.value) return false;
            break;
        case Filter::What::OnWorker:
            if (workerOf(t, e) != static_cast<std::int64_t>(f.value)) return false;
            break;
        }
    }
    return true;
}

// The events a selection's range allows: [lo, hi).
bool bounds(const Selection& s, const trace::Trace& t, std::size_t& lo, std::size_t& hi, std::string& error) {
    lo = 0;
    hi = t.events.size();
    std::size_t at = 0;
    if (s.after) {
        if (!resolve(*s.after, t, at, error)) return false;
        lo = at + 1;
    }
    if (s.before) {
        if (!resolve(*s.before, t, at, error)) return false;
        hi = at;
    }
    return true;
}

} // namespace

bool parseQuery(const std::string& text, const std::string& where, Query& out, std::string& error) {
    return parseWith(text, where, out, error, [](Parser& p, Query& q) { return p.query(q); });
}

bool parseEventRef(const std::string& text, const std::string& where, EventRef& out, std::string& error) {
    return parseWith(text, where, out, error, [](Parser& p, EventRef& r) { return p.eventRef(r, true); });
}

bool parseExpect(const std::string& text, const std::string& where, Expect& out, std::string& error) {
    return parseWith(text, where, out, error, [](Parser& p, Expect& e) { return p.expect(e); });
}

bool parseChecks(const std::string& text, const std::string& file, LessonChecks& out, std::string& error) {
    out = LessonChecks{};
    enum class State { Top, Question, Exercise } state = State::Top;
    // Which keys the current question or exercise has given.
    bool has_answer = false, has_show = false, has_why = false, has_expect = false, has_says = false;
    auto finishSection = [&](int line) {
        const std::string at = file + ":" + std::to_string(line) + ": ";
        if (state == State::Question) {
            const char* missing = !has_answer ? "answer:" : !has_show ? "show:" : !has_why ? "why:" : nullptr;
            if (missing) return error = at + "the question has no '" + missing + "'", false;
        } else if (state == State::Exercise) {
            out.exercise.text = trim(out.exercise.text);
            const char* missing = out.exercise.text.empty() ? "text (the change to make)"
                                  : !has_expect           ? "'expect:'"
                                  : !has_says             ? "'says:'"
                                                          : nullptr;
            if (missing) return error = at + "the exercise has no " + missing, false;
        }
        return true;
    };
    auto sectionLine = [&] { return state == State::Question ? out.questions.back().line : out.exercise.line; };

    std::istringstream in(text);
    std::string raw;
    int number = 0;
    while (std::getline(in, raw)) {
        ++number;
        const std::string line = trim(raw);
        const std::string where = file + ":" + std::to_string(number);
        if (line.rfind("### Q:", 0) == 0 || line == "## Exercise") {
            if (!finishSection(state == State::Top ? number : sectionLine())) return false;
            has_answer = has_show = has_why = has_expect = has_says = false;
            if (line == "## Exercise") {
                if (out.has_exercise) return error = where + ": a second '## Exercise'", false;
                out.has_exercise = true;
                out.exercise.line = number;
                state = State::Exercise;
            } else {
                if (state == State::Exercise) return error = where + ": questions come before the exercise", false;
                Question q;
                q.line = number;
                q.text = trim(line.substr(6));
                if (q.text.empty()) return error = where + ": the question has no text", false;
                out.questions.push_back(std::move(q));
                state = State::Question;
            }
            continue;
        }
        if (line.empty()) {
            if (state == State::Exercise && !has_expect && !out.exercise.text.empty()) out.exercise.text += "\n\n";
            continue;
        }
        // "key: value"
        std::string key, value;
        if (const auto colon = line.find(':'); colon != std::string::npos && colon > 0) {
            const std::string k = line.substr(0, colon);
            if (k == "answer" || k == "show" || k == "why" || k == "expect" || k == "says" || k == "threads" ||
                k == "requires" || k == "because" || k == "opens" || k == "focus") {
                key = k;
                value = trim(line.substr(colon + 1));
            }
        }
        if (state == State::Top) {
            if (key == "threads") {
                std::istringstream list(value);
                std::string word;
                while (list >> word) {
                    std::int64_t n = 0;
                    if (!parseInteger(word, n) || n < 1 || n > 256)
                        return error = where + ": not a thread count '" + word + "'", false;
                    out.threads.push_back(static_cast<int>(n));
                }
                if (out.threads.empty()) return error = where + ": 'threads:' lists no thread counts", false;
            } else if (key == "focus") {
                // KIND... at checkpoint "NAME"
                std::vector<Token> tokens;
                if (!tokenize(value, where, tokens, error)) return false;
                Focus focus;
                focus.line = number;
                std::size_t t = 0;
                for (; t < tokens.size() && !(tokens[t].text == "at" && !tokens[t].quoted); ++t) {
                    int kind = -1;
                    for (int k = 0; k < analysis::kFlowKindCount; ++k)
                        if (tokens[t].text == analysis::flowKindName(static_cast<analysis::FlowKind>(k))) kind = k;
                    if (kind < 0) {
                        std::string names;
                        for (int k = 0; k < analysis::kFlowKindCount; ++k)
                            names += (k ? ", " : "") + std::string(analysis::flowKindName(static_cast<analysis::FlowKind>(k)));
                        return error = where + ": '" + tokens[t].text + "' is not an arrow kind (one of: " + names + ")", false;
                    }
                    focus.flow_kinds |= 1u << kind;
                }
                if (focus.flow_kinds == 0 || t + 3 != tokens.size() || tokens[t + 1].text != "checkpoint" || !tokens[t + 2].quoted)
                    return error = where + ": expected 'focus: KIND... at checkpoint \"NAME\"'", false;
                focus.checkpoint = "checkpoint: " + tokens[t + 2].text;
                out.focus.push_back(std::move(focus));
            } else if (key == "opens") {
                // An optional "first N links" after the checkpoint.
                std::string_view ref_text = value;
                if (const std::size_t first = ref_text.rfind(" first "); first != std::string_view::npos && first > ref_text.rfind('"')) {
                    const std::string rest(ref_text.substr(first + 7));
                    char* end = nullptr;
                    const unsigned long n = std::strtoul(rest.c_str(), &end, 10);
                    const std::string_view tail(end);
                    if (rest.empty() || !std::isdigit(static_cast<unsigned char>(rest[0])) ||
                        (tail != " links" && tail != " warm links") || n == 0 || n > 100000)
                        return error = where + ": expected 'opens: checkpoint \"NAME\" first N links' or '... first N warm links' (N from 1 to 100000)", false;
                    out.opens_links = n;
                    out.opens_warm = tail == " warm links";
                    ref_text = ref_text.substr(0, first);
                }
                EventRef ref;
                if (!parseEventRef(std::string(ref_text), where, ref, error)) return false;
                if (ref.how != EventRef::How::Mark || ref.label.rfind("checkpoint: ", 0) != 0)
                    return error = where + ": 'opens:' names a checkpoint: opens: checkpoint \"NAME\"", false;
                out.opens = ref.label;
            } else if (key == "requires") {
                if (!out.preconditions.empty() && out.preconditions.back().because.empty())
                    return error = where + ": the 'requires:' before this one has no 'because:'", false;
                Precondition p;
                p.line = number;
                std::string_view rest = value;
                for (const auto& [prefix, policy] : {std::pair{std::string_view("under seed:"), Precondition::Policy::Seed},
                                                     std::pair{std::string_view("under scaling:"), Precondition::Policy::Scaling}})
                    if (rest.starts_with(prefix)) {
                        p.policy = policy;
                        rest.remove_prefix(prefix.size());
                        while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
                    }
                if (rest.starts_with("under "))
                    return error = where + ": 'requires: under' names a policy, seed or scaling: requires: under seed: count ...",
                           false;
                if (!parseExpect(std::string(rest), where, p.expect, error)) return false;
                out.preconditions.push_back(std::move(p));
            } else if (key == "because") {
                if (out.preconditions.empty() || !out.preconditions.back().because.empty())
                    return error = where + ": 'because:' belongs right after a 'requires:'", false;
                if (value.empty()) return error = where + ": 'because:' says nothing", false;
                out.preconditions.back().because = value;
            } else if (!key.empty()) {
                return error = where + ": '" + key + ":' outside a question or the exercise", false;
            }
            continue; // a title or an introduction
        }
        if (state == State::Question) {
            Question& q = out.questions.back();
            if (key == "answer") {
                if (!parseQuery(value, where, q.answer, error)) return false;
                has_answer = true;
            } else if (key == "show") {
                if (!parseEventRef(value, where, q.show, error)) return false;
                has_show = true;
            } else if (key == "why") {
                if (value.empty()) return error = where + ": 'why:' says nothing", false;
                q.why = value;
                has_why = true;
            } else {
                return error = where + ": expected 'answer:', 'show:' or 'why:', found '" + line.substr(0, 40) + "'", false;
            }
            continue;
        }
        // The exercise: its text, then expect: and says:.
        if (key == "expect") {
            if (!parseExpect(value, where, out.exercise.expect, error)) return false;
            has_expect = true;
        } else if (key == "says") {
            if (value.empty()) return error = where + ": 'says:' says nothing", false;
            out.exercise.says = value;
            has_says = true;
        } else if (!key.empty() || has_expect || has_says) {
            return error = where + ": expected 'expect:' or 'says:' after the exercise's text, found '" +
                           line.substr(0, 40) + "'",
                   false;
        } else {
            if (!out.exercise.text.empty() && !out.exercise.text.ends_with("\n\n")) out.exercise.text += ' ';
            out.exercise.text += line;
        }
    }
    if (!out.preconditions.empty() && out.preconditions.back().because.empty())
        return error = file + ":" + std::to_string(out.preconditions.back().line) + ": the 'requires:' has no 'because:'",
               false;
    if (state != State::Top && !finishSection(sectionLine())) return false;
    if (out.questions.empty() && !out.has_exercise) return error = file + ": no questions and no exercise", false;
    return true;
}

bool resolve(const EventRef& ref, const trace::Trace& t, std::size_t& index, std::string& error) {
    if (ref.how == EventRef::How::Mark) {
        for (std::size_t i = 0; i < t.events.size(); ++i) {
            const trace::Event& e = t.events[i];
            if (e.kind == EventKind::Mark && t.string(e.arg[0]) == ref.label) return index = i, true;
        }
        error = "this trace has no " + ref.text;
        return false;
    }
    std::size_t lo = 0, hi = 0;
    if (!bounds(ref.selection, t, lo, hi, error)) return false;
    if (ref.how == EventRef::How::First) {
        for (std::size_t i = lo; i < hi; ++i)
            if (matches(ref.selection, t, t.events[i])) return index = i, true;
    } else {
        for (std::size_t i = hi; i > lo; --i)
            if (matches(ref.selection, t, t.events[i - 1])) return index = i - 1, true;
    }
    error = "this trace has no " + ref.text;
    return false;
}

bool evaluate(const Query& q, const trace::Trace& t, std::int64_t& value, std::string& error) {
    if (q.kind == AnswerKind::Count) {
        std::size_t lo = 0, hi = 0;
        if (!bounds(q.selection, t, lo, hi, error)) return false;
        std::int64_t n = 0;
        for (std::size_t i = lo; i < hi; ++i) n += matches(q.selection, t, t.events[i]);
        value = n;
        return true;
    }
    std::size_t index = 0;
    if (!resolve(q.ref, t, index, error)) return false;
    const trace::Event& e = t.events[index];
    if (q.kind == AnswerKind::Worker) {
        value = workerOf(t, e);
        if (value < 0) return error = q.ref.text + " was recorded by a thread that is no worker", false;
        return true;
    }
    const trace::RecordKindInfo& info = trace::recordKind(e.kind);
    // The fiber a switch or a mutex hand-off gives the thread or the mutex to: its `to`.
    const int to = fieldNamed(info, "to");
    for (int f = 0; f < info.field_count; ++f)
        if (info.fields[f].type == FieldType::Fiber && (to < 0 || f == to)) {
            value = static_cast<std::int64_t>(trace::fieldValue(e, f));
            return true;
        }
    error = std::string("a ") + info.name + " record names no fiber";
    return false;
}

bool holds(const Expect& x, const trace::Trace& t, bool& result, std::int64_t& value, std::string& error) {
    if (!evaluate(x.query, t, value, error)) return false;
    switch (x.op) {
    case Expect::Op::Eq: result = value == x.number; break;
    case Expect::Op::Ne: result = value != x.number; break;
    case Expect::Op::Ge: result = value >= x.number; break;
    case Expect::Op::Le: result = value <= x.number; break;
    case Expect::Op::Gt: result = value > x.number; break;
    case Expect::Op::Lt: result = value < x.number; break;
    }
    return true;
}

std::string unmetPrecondition(const std::vector<Precondition>& preconditions, const trace::Trace& trace) {
    const bool scaling = trace::ranScalingPolicy(trace);
    for (const Precondition& p : preconditions) {
        if ((p.policy == Precondition::Policy::Seed && scaling) || (p.policy == Precondition::Policy::Scaling && !scaling))
            continue;
        bool met = false;
        std::int64_t value = 0;
        std::string error;
        if (!holds(p.expect, trace, met, value, error)) return p.because + ": not so in this run (" + error + ")";
        if (!met)
            return p.because + ": not so in this run (" + p.expect.query.text + " is " +
                   describeAnswer(p.expect.query.kind, value) + ", wanted " +
                   p.expect.text.substr(p.expect.query.text.size() + (p.expect.text.size() > p.expect.query.text.size())) +
                   ")";
    }
    return "";
}

std::string describeAnswer(AnswerKind kind, std::int64_t value) {
    switch (kind) {
    case AnswerKind::Worker: return "worker " + std::to_string(value);
    case AnswerKind::Fiber: return "fiber " + std::to_string(value);
    case AnswerKind::Count: break;
    }
    return std::to_string(value);
}

Verdict grade(const Question& question, const trace::Trace& trace, std::int64_t given) {
    Verdict v;
    std::string error;
    if (!evaluate(question.answer, trace, v.value, error)) {
        v.text = "This trace cannot answer it: " + error + ".";
        return v;
    }
    v.right = v.value == given;
    v.text = v.right ? "Right." : "Not quite: the trace says " + describeAnswer(question.answer.kind, v.value) + ".";
    v.has_event = resolve(question.show, trace, v.event, error);
    if (!v.has_event) v.text += " (" + error + " to show.)";
    return v;
}

} // namespace fiberscope::viewer::checks
