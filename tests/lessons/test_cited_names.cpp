// The explanations name the runtime's code: the lessons' narratives
// (lessons/README.md, lessons/NN-*/lesson.md) and the viewer's one-sentence
// explanations of records (viewer/src/model/*.cpp: "Mutex::lockSlow()",
// "runtime/src/sync/mutex.cpp"). Code moves; a renamed function or file leaves a
// sentence pointing at nothing. This test reads every cited file path and
// function name and checks each against the source tree, listing every stale
// one at once.
//
// Why parse source text instead of asking the compiler: the citations are
// prose, and what the reader will do is grep for them. So the check is a
// grep too, done once: every runtime/ source (comments and string literals
// removed, so a name only a comment still mentions does not count) is cut
// into an index of the names that are followed by '(' — free functions,
// calls, `Class::member(` definitions, and the members declared in a
// `class`/`struct` body. A cited `Name()` must be in it; `Class::name()`
// must be a member of Class. Where a viewer explanation pairs a function with
// a file ("execute()", "runtime/src/io/operation.cpp"), the function must be in
// that very file.
//
// What is cited where:
// - lesson markdown: inside `code spans` only (prose has parentheses too);
//   a lesson may also name its own program's functions and variables
//   (lessons/NN-*/main.cpp);
// - viewer model sources (and the other user-facing sources: the viewer's
//   panels, the tracer's vocabulary, analysis and tools): inside string
//   literals;
// - names qualified with trace:: are the tracer's public API
//   (tracer/include/fiberscope/); names qualified with std:: or a bare ::
//   (::usleep) are the C++ library's and the kernel's, not checked.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fiberscope/trace_records.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = FIBERSCOPE_SOURCE_DIR;

std::string slurp(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

std::string fromRoot(const fs::path& path) { return fs::relative(path, kRoot).generic_string(); }

// C/C++ source without comments, string and character literals (each
// replaced by a space; newlines kept).
std::string codeOnly(const std::string& src) {
    std::string out;
    out.reserve(src.size());
    for (std::size_t i = 0; i < src.size();) {
        const char c = src[i];
        const char n = i + 1 < src.size() ? src[i + 1] : '\0';
        if (c == '/' && n == '/') {
            while (i < src.size() && src[i] != '\n') ++i;
        } else if (c == '/' && n == '*') {
            i += 2;
            while (i + 1 < src.size() && !(src[i] == '*' && src[i + 1] == '/')) {
                if (src[i] == '\n') out += '\n';
                ++i;
            }
            i += 2;
            out += ' ';
        } else if (c == '"' || c == '\'') {
            ++i;
            while (i < src.size() && src[i] != c && src[i] != '\n') i += src[i] == '\\' ? 2 : 1;
            ++i;
            out += ' ';
        } else {
            out += c;
            ++i;
        }
    }
    return out;
}

bool identStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool identChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The names a piece of code has that are followed by '('.
struct NameIndex {
    std::set<std::string> called;    // "schedule", "lockSlow", "~Zone"
    std::set<std::string> qualified; // "Mutex::lockSlow", "Zone::~Zone"
    std::set<std::string> identifiers; // every name at all: fields, constants, enumerators

    void merge(const NameIndex& other) {
        called.insert(other.called.begin(), other.called.end());
        qualified.insert(other.qualified.begin(), other.qualified.end());
        identifiers.insert(other.identifiers.begin(), other.identifiers.end());
    }
};

NameIndex indexCode(const std::string& code) {
    struct Token {
        std::string text; // an identifier (with a leading '~' for destructors), or one punctuation
        bool ident = false;
    };
    std::vector<Token> tokens;
    for (std::size_t i = 0; i < code.size();) {
        const char c = code[i];
        if (identStart(c) || (c == '~' && i + 1 < code.size() && identStart(code[i + 1]))) {
            const std::size_t start = i++;
            while (i < code.size() && identChar(code[i])) ++i;
            tokens.push_back({code.substr(start, i - start), true});
        } else if (c == ':' && i + 1 < code.size() && code[i + 1] == ':') {
            tokens.push_back({"::", false});
            i += 2;
        } else if (std::isspace(static_cast<unsigned char>(c))) {
            ++i;
        } else {
            tokens.push_back({std::string(1, c), false});
            ++i;
        }
    }
    NameIndex index;
    struct Scope {
        std::string klass; // empty: not a class body
        int depth;
    };
    std::vector<Scope> scopes;
    int depth = 0;
    std::string pending_class; // a class/struct head seen, its '{' not yet
    for (std::size_t t = 0; t < tokens.size(); ++t) {
        const Token& tok = tokens[t];
        if (tok.ident) index.identifiers.insert(tok.text);
        if (tok.ident && (tok.text == "class" || tok.text == "struct") &&
            !(t > 0 && tokens[t - 1].text == "enum")) {
            // class [alignas(N)] Name ... {   (or ; for a declaration)
            std::size_t k = t + 1;
            if (k < tokens.size() && tokens[k].text == "alignas") {
                int parens = 0;
                for (++k; k < tokens.size(); ++k) {
                    if (tokens[k].text == "(") ++parens;
                    else if (tokens[k].text == ")" && --parens == 0) break;
                }
                ++k;
            }
            if (k >= tokens.size() || !tokens[k].ident) continue;
            // Not a template parameter: `template <class T>`, `<class A, class B = C>`.
            const std::string after = k + 1 < tokens.size() ? tokens[k + 1].text : "";
            if (after != ">" && after != "," && after != "=") pending_class = tokens[k].text;
            t = k;
            continue;
        }
        if (tok.text == ";") { // a declaration, not a definition
            pending_class.clear();
            continue;
        }
        if (tok.text == "{") {
            ++depth;
            scopes.push_back({pending_class, depth});
            pending_class.clear();
            continue;
        }
        if (tok.text == "}") {
            if (!scopes.empty() && scopes.back().depth == depth) scopes.pop_back();
            --depth;
            continue;
        }
        if (!tok.ident || t + 1 >= tokens.size() || tokens[t + 1].text != "(") continue;
        index.called.insert(tok.text);
        if (t >= 2 && tokens[t - 1].text == "::" && tokens[t - 2].ident)
            index.qualified.insert(tokens[t - 2].text + "::" + tok.text);
        if (!scopes.empty() && !scopes.back().klass.empty() && scopes.back().depth == depth)
            index.qualified.insert(scopes.back().klass + "::" + tok.text);
    }
    return index;
}

bool isSource(const fs::path& p) {
    const std::string ext = p.extension().string();
    return ext == ".cpp" || ext == ".hpp" || ext == ".h" || ext == ".S";
}

// Every source file under `dir`, indexed, by path relative to the root.
std::map<std::string, NameIndex> indexTree(const fs::path& dir) {
    std::map<std::string, NameIndex> files;
    for (const auto& entry : fs::recursive_directory_iterator(dir))
        if (entry.is_regular_file() && isSource(entry.path()))
            files[fromRoot(entry.path())] = indexCode(codeOnly(slurp(entry.path())));
    return files;
}

NameIndex unionOf(const std::map<std::string, NameIndex>& files) {
    NameIndex all;
    for (const auto& [path, index] : files) all.merge(index);
    return all;
}

// One cited piece of text and where it was found.
struct Cited {
    std::string where; // file
    std::string text;
};

std::vector<Cited> codeSpans(const fs::path& md) {
    std::vector<Cited> found;
    const std::string text = slurp(md);
    static const std::regex span("`([^`\n]+)`");
    for (std::sregex_iterator it(text.begin(), text.end(), span), end; it != end; ++it)
        found.push_back({fromRoot(md), (*it)[1].str()});
    return found;
}

std::vector<Cited> stringLiterals(const fs::path& source) {
    std::vector<Cited> found;
    const std::string text = slurp(source);
    static const std::regex literal(R"re("((?:[^"\\\n]|\\.)*)")re");
    for (std::sregex_iterator it(text.begin(), text.end(), literal), end; it != end; ++it)
        found.push_back({fromRoot(source), (*it)[1].str()});
    return found;
}

// A function name as cited: "Mutex::lockSlow", "schedule", "trace::mark".
struct FunctionName {
    std::vector<std::string> parts;
    bool global = false; // ::usleep
};

std::vector<FunctionName> functionNames(const std::string& text) {
    std::vector<FunctionName> names;
    // The leftmost match starts at a name's first character: `ring.message()`
    // cites message(), `::usleep(8000)` the global usleep().
    static const std::regex call(R"re((::)?((?:[A-Za-z_][A-Za-z0-9_]*::)*~?[A-Za-z_][A-Za-z0-9_]*)\()re");
    for (std::sregex_iterator it(text.begin(), text.end(), call), end; it != end; ++it) {
        FunctionName name;
        name.global = (*it)[1].matched;
        const std::string full = (*it)[2].str();
        for (std::size_t at = 0;;) {
            const std::size_t next = full.find("::", at);
            name.parts.push_back(full.substr(at, next == std::string::npos ? std::string::npos : next - at));
            if (next == std::string::npos) break;
            at = next + 2;
        }
        names.push_back(name);
    }
    return names;
}

std::string joined(const FunctionName& name) {
    std::string out = name.global ? "::" : "";
    for (std::size_t i = 0; i < name.parts.size(); ++i) out += (i ? "::" : "") + name.parts[i];
    return out + "()";
}

// Words in code spans that read like calls but are the C++ library's or
// pseudo-notation, written without std::.
const std::set<std::string> kNotOurs = {
    "compare_exchange", // std::atomic's compare_exchange_weak/strong, "compare_exchange(word: a -> b)"
};

enum class Lookup { Runtime, Tracer, NotOurs };

// Which index answers for `name`, with the namespaces stripped.
Lookup classify(FunctionName& name) {
    if (name.global || name.parts.front() == "std") return Lookup::NotOurs;
    while (name.parts.size() > 1 && (name.parts.front() == "fiberscope" || name.parts.front() == "detail"))
        name.parts.erase(name.parts.begin());
    if (name.parts.size() > 1 && name.parts.front() == "trace") {
        name.parts.erase(name.parts.begin());
        return Lookup::Tracer;
    }
    if (name.parts.size() == 1 && kNotOurs.count(name.parts.front())) return Lookup::NotOurs;
    return Lookup::Runtime;
}

bool found(const NameIndex& index, const FunctionName& name) {
    if (name.parts.size() == 1) return index.called.count(name.parts[0]) > 0;
    const std::string member = name.parts[name.parts.size() - 2] + "::" + name.parts.back();
    return index.qualified.count(member) > 0;
}

// Cited paths: runtime/src/..., runtime/include/..., tracer/include/... .
std::vector<std::string> paths(const std::string& text) {
    std::vector<std::string> found;
    static const std::regex path(R"((?:runtime|tracer)/(?:src|include)/[A-Za-z0-9_./-]*[A-Za-z0-9_])");
    for (std::sregex_iterator it(text.begin(), text.end(), path), end; it != end; ++it) found.push_back(it->str());
    return found;
}

std::vector<fs::path> lessonNarratives() {
    std::vector<fs::path> files{kRoot / "lessons" / "README.md"};
    for (const auto& entry : fs::directory_iterator(kRoot / "lessons"))
        if (entry.is_directory())
            for (const char* name : {"lesson.md", "checks.md"}) // checks.md: the questions' and exercise's names too
                if (fs::exists(entry.path() / name)) files.push_back(entry.path() / name);
    std::sort(files.begin(), files.end());
    return files;
}

std::vector<fs::path> viewerModelSources() {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(kRoot / "viewer" / "src" / "model"))
        if (entry.path().extension() == ".cpp") files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    return files;
}

// Every other source whose strings a reader sees: the viewer's panels and
// lesson view, the tracer's vocabulary, analysis and tools (stats, export,
// timeline). Their sentences name runtime code less often, but do.
std::vector<fs::path> otherUserFacingSources() {
    std::vector<fs::path> files;
    for (const fs::path& dir : {kRoot / "viewer" / "src" / "ui", kRoot / "viewer" / "src" / "lessons",
                               kRoot / "tracer" / "src", kRoot / "tracer" / "analysis", kRoot / "tracer" / "tools"})
        if (fs::is_directory(dir))
            for (const auto& entry : fs::directory_iterator(dir))
                if (entry.path().extension() == ".cpp") files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    return files;
}

struct Indexes {
    std::map<std::string, NameIndex> runtime_files = indexTree(kRoot / "runtime");
    NameIndex runtime = unionOf(runtime_files);
    std::map<std::string, NameIndex> tracer_files = indexTree(kRoot / "tracer" / "include");
    NameIndex tracer = unionOf(tracer_files);
};

const Indexes& indexes() {
    static const Indexes built;
    return built;
}

} // namespace

TEST_CASE("the index of runtime names finds what it should and not what only a comment says", "[cited]") {
    const NameIndex index = indexCode(codeOnly("// gone()\n/* old() */ const char* s = \"quoted()\";\n"
                                               "struct alignas(64) Thread { void park(); ~Thread(); };\n"
                                               "template <class T> class Queue { Status put(T v) { return go(v); } };\n"
                                               "Status Mutex::lockSlow(int) {}\n"));
    CHECK(index.called.count("gone") == 0);
    CHECK(index.called.count("old") == 0);
    CHECK(index.called.count("quoted") == 0);
    CHECK(index.qualified.count("Thread::park") == 1);
    CHECK(index.qualified.count("Thread::~Thread") == 1);
    CHECK(index.qualified.count("Queue::put") == 1);
    CHECK(index.qualified.count("Queue::go") == 0); // a call in a member's body is not a member
    CHECK(index.called.count("go") == 1);
    CHECK(index.qualified.count("Mutex::lockSlow") == 1);
    const auto names = functionNames("`ring.message()` and Poller::wake() then ::usleep(8000), std::move(x)");
    REQUIRE(names.size() == 4);
    CHECK(joined(names[0]) == "message()");
    CHECK(joined(names[1]) == "Poller::wake()");
    CHECK(joined(names[2]) == "::usleep()");
    CHECK(joined(names[3]) == "std::move()");
}

TEST_CASE("every runtime file and function the lessons and the viewer's explanations cite exists", "[cited]") {
    const Indexes& idx = indexes();
    REQUIRE(idx.runtime.called.count("findReadyFiber") == 1); // the index works at all
    REQUIRE(idx.runtime.qualified.count("Mutex::lockSlow") == 1);

    struct Citing {
        Cited cited;
        bool from_lesson; // a lesson's markdown: its program's own names count too
        bool names;       // look for function names in it (paths: always)
    };
    std::vector<Citing> cited;
    for (const fs::path& md : lessonNarratives()) {
        cited.push_back({{fromRoot(md), slurp(md)}, true, false}); // paths anywhere in the text
        for (const Cited& c : codeSpans(md)) cited.push_back({c, true, true});
    }
    for (const fs::path& src : viewerModelSources())
        for (const Cited& c : stringLiterals(src)) cited.push_back({c, false, true});
    for (const fs::path& src : otherUserFacingSources())
        for (const Cited& c : stringLiterals(src)) cited.push_back({c, false, true});
    REQUIRE(cited.size() > 100);

    std::map<std::string, NameIndex> lesson_programs; // a lesson's own functions and variables
    std::set<std::string> stale;
    std::size_t names_checked = 0, paths_checked = 0;
    for (const auto& [c, from_lesson, look_for_names] : cited) {
        if (!look_for_names) {
            for (const std::string& path : paths(c.text)) {
                ++paths_checked;
                if (!fs::exists(kRoot / path)) stale.insert(c.where + ": file " + path);
            }
            continue;
        }
        if (!from_lesson)
            for (const std::string& path : paths(c.text)) {
                ++paths_checked;
                if (!fs::exists(kRoot / path)) stale.insert(c.where + ": file " + path);
            }
        for (FunctionName name : functionNames(c.text)) {
            const std::string as_cited = joined(name);
            const Lookup lookup = classify(name);
            if (lookup == Lookup::NotOurs) continue;
            ++names_checked;
            if (found(lookup == Lookup::Tracer ? idx.tracer : idx.runtime, name)) continue;
            if (from_lesson) {
                const fs::path program = (kRoot / c.where).parent_path() / "main.cpp";
                auto [it, fresh] = lesson_programs.try_emplace(c.where);
                if (fresh && fs::exists(program)) it->second = indexCode(codeOnly(slurp(program)));
                if (found(it->second, name)) continue;
            }
            stale.insert(c.where + ": function " + as_cited + " (in \"" + c.text + "\")");
        }
    }
    INFO("checked " << names_checked << " function names and " << paths_checked << " paths");
    std::string list;
    for (const auto& s : stale) list += "  " + s + "\n";
    INFO("stale citations (" << stale.size() << "):\n" << list);
    CHECK(stale.empty());
    CHECK(names_checked > 100);
    CHECK(paths_checked > 20);
}

// A lesson's markdown names the runtime's fields, constants and enumerators
// in code spans too: `ready_queue`, `idle_search_index`, `kMaxIdleSearch`,
// `register_select`. Checked: a span that is one (qualified) name written in
// snake_case or as a kConstant. Not checked: kernel and liburing names
// (`IORING_OP_READ`, `MSG_RING`, `io_uring_enter`, `io_uring_prep_accept`),
// abbreviations (`_recv`), and plain words.
// A record's field, by the record table's name (`runqueue_wait_ns`): a
// name the lessons cite as `records` prints it.
const std::set<std::string>& recordFieldNames() {
    static const std::set<std::string> names = [] {
        std::set<std::string> out;
        for (unsigned k = 0; k < 256; ++k) {
            const auto& info = fiberscope::trace::recordKind(static_cast<fiberscope::trace::EventKind>(k));
            for (int f = 0; info.name && f < info.field_count; ++f) out.insert(info.fields[f].name);
        }
        return out;
    }();
    return names;
}

TEST_CASE("every runtime field, constant and enumerator the lessons name exists", "[cited]") {
    const Indexes& idx = indexes();
    static const std::regex one_name(R"re((?:[A-Za-z_][A-Za-z0-9_]*::)*([A-Za-z_][A-Za-z0-9_]*))re");
    static const std::regex constant_name(R"re(k[A-Z][A-Za-z0-9]*)re");
    std::set<std::string> stale;
    std::size_t checked = 0;
    for (const fs::path& md : lessonNarratives()) {
        const fs::path program = md.parent_path() / "main.cpp";
        const NameIndex own = fs::exists(program) ? indexCode(codeOnly(slurp(program))) : NameIndex{};
        for (const Cited& c : codeSpans(md)) {
            std::smatch m;
            if (!std::regex_match(c.text, m, one_name)) continue;
            const std::string name = m[1].str();
            if (c.text.rfind("std::", 0) == 0 || name.front() == '_' || name.rfind("io_uring_", 0) == 0) continue;
            if (std::all_of(name.begin(), name.end(), [](char ch) { return !std::islower(static_cast<unsigned char>(ch)); }))
                continue; // IORING_OP_READ, MSG_RING, EAGAIN
            if (name.find('_') == std::string::npos && !std::regex_match(name, constant_name)) continue;
            ++checked;
            if (idx.runtime.identifiers.count(name) || idx.tracer.identifiers.count(name) || own.identifiers.count(name) ||
                recordFieldNames().count(name))
                continue;
            stale.insert(c.where + ": " + c.text);
        }
    }
    std::string list;
    for (const auto& s : stale) list += "  " + s + "\n";
    INFO("checked " << checked << " names; stale (" << stale.size() << "):\n" << list);
    CHECK(stale.empty());
    CHECK(checked > 20);
}

TEST_CASE("every function a viewer explanation pairs with a file is in that file", "[cited]") {
    const Indexes& idx = indexes();
    // make(text, "Mutex::lockSlow()", kMutex, i) and {text, "execute()", kOps}:
    // the function literal, then its file as a constant or a literal.
    static const std::regex pair(R"re("((?:[A-Za-z_][A-Za-z0-9_]*::)*~?[A-Za-z_][A-Za-z0-9_]*)\(\)"\s*,\s*(k[A-Za-z0-9_]+|"[^"\n]+"))re");
    static const std::regex constant(R"re(constexpr\s+const\s+char\s*\*\s*(k[A-Za-z0-9_]+)\s*=\s*"([^"]+)")re");
    std::set<std::string> stale;
    std::size_t pairs = 0;
    for (const fs::path& src : viewerModelSources()) {
        const std::string text = slurp(src);
        std::map<std::string, std::string> constants;
        for (std::sregex_iterator it(text.begin(), text.end(), constant), end; it != end; ++it)
            constants[(*it)[1].str()] = (*it)[2].str();
        for (std::sregex_iterator it(text.begin(), text.end(), pair), end; it != end; ++it) {
            const std::string function = (*it)[1].str() + "()";
            std::string file = (*it)[2].str();
            if (file.front() == '"') file = file.substr(1, file.size() - 2);
            else if (constants.count(file)) file = constants[file];
            else {
                stale.insert(fromRoot(src) + ": " + function + " paired with an unknown constant " + file);
                continue;
            }
            ++pairs;
            FunctionName name = functionNames(function).front();
            const Lookup lookup = classify(name);
            const auto& files = lookup == Lookup::Tracer ? idx.tracer_files : idx.runtime_files;
            const auto in = files.find(file);
            if (in == files.end()) {
                stale.insert(fromRoot(src) + ": " + function + " paired with " + file + ", not a runtime or tracer source");
                continue;
            }
            if (!found(in->second, name)) stale.insert(fromRoot(src) + ": " + function + " is not in " + file);
        }
    }
    std::string list;
    for (const auto& s : stale) list += "  " + s + "\n";
    INFO("checked " << pairs << " function-file pairs; stale (" << stale.size() << "):\n" << list);
    CHECK(stale.empty());
    CHECK(pairs > 30);
}

// Lessons 3 and 4 say how far schedule() and findReadyFiber() look: four
// consecutive queue slots, their own among them. The numbers live in
// runtime/src/loop.hpp; if they change, so must the lessons.
TEST_CASE("the search widths lessons 3 and 4 describe are the runtime's", "[cited]") {
    const std::string loop = slurp(kRoot / "runtime" / "src" / "loop.hpp");
    for (const char* constant : {"kMaxIdleSearch", "kMaxStealReadySearch"}) {
        INFO(constant << " in runtime/src/loop.hpp; lessons/03-waking-idle-threads and 04-work-stealing say four");
        std::smatch m;
        const std::regex definition(std::string(constant) + R"re(\s*=\s*([0-9]+)\s*;)re");
        REQUIRE(std::regex_search(loop, m, definition));
        CHECK(m[1].str() == "4");
    }
    for (const char* lesson : {"03-waking-idle-threads", "04-work-stealing"}) {
        INFO("lessons/" << lesson << "/lesson.md");
        CHECK(slurp(kRoot / "lessons" / lesson / "lesson.md").find("four consecutive") != std::string::npos);
    }
}
