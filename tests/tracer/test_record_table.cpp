// The record-kind table (trace_records.hpp) against what it describes: the
// reader decodes every kind with exactly the table's fields (and refuses a
// record short of one, or with an enumerated value or worker out of range),
// the typed emitters write every kind in the table's order, and FORMAT.md's
// record table names the same kinds and fields.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fiberscope/trace.hpp>
#include <fiberscope/trace_reader.hpp>
#include <fiberscope/trace_records.hpp>

#include "../support/recorded_trace.hpp"
#include "../support/trace_builder.hpp"

using namespace fiberscope;
using namespace fiberscope::trace;
using fiberscope::testing::TraceBuilder;

namespace {

constexpr std::uint64_t kObject = 0xABCDEF12345;
constexpr std::int64_t kSigned = -7;

// A distinct value for field `k` of `info`, as the decoded Event holds it.
std::uint64_t sampleValue(const RecordKindInfo& info, int k) {
    const FieldInfo& f = info.fields[k];
    switch (f.type) {
    case FieldType::Fiber: return 7 + 5 * static_cast<std::uint64_t>(k); // 7, 12, 17: distinct per field
    case FieldType::Worker: return 3;
    case FieldType::WorkerPlusOne: return 4;
    case FieldType::String: return 1;
    case FieldType::Object: return kObject;
    case FieldType::Enum: return f.max;
    case FieldType::Opcode: return 210;
    case FieldType::Signed: return static_cast<std::uint64_t>(kSigned);
    case FieldType::Count: return 42;
    default: return 0;
    }
}

// The raw varints of one record of `info` whose fields decode to
// sampleValue() (fibers as deltas from base fiber 0, signed values zigzag).
std::vector<std::uint64_t> rawFields(const RecordKindInfo& info) {
    std::vector<std::uint64_t> raw;
    std::int64_t previous_fiber = 0;
    for (int k = 0; k < info.field_count; ++k) {
        const std::uint64_t v = sampleValue(info, k);
        switch (info.fields[k].type) {
        case FieldType::Fiber:
            raw.push_back(TraceBuilder::zigzag(static_cast<std::int64_t>(v) - previous_fiber));
            previous_fiber = static_cast<std::int64_t>(v);
            break;
        case FieldType::Signed: raw.push_back(TraceBuilder::zigzag(static_cast<std::int64_t>(v))); break;
        default: raw.push_back(v); break;
        }
    }
    return raw;
}

bool parse(const TraceBuilder& b, Trace& trace, ReadError& error) {
    const std::vector<std::uint8_t> bytes = b.bytes();
    return parseTrace(bytes, trace, error, {.strict = true});
}

TraceBuilder oneRecord(EventKind kind, const std::vector<std::uint64_t>& raw) {
    TraceBuilder b;
    b.chunk(0);
    b.string(1, "a label");
    TraceBuilder& r = b;
    switch (raw.size()) {
    case 0: r.record(kind, 5); break;
    case 1: r.record(kind, 5, {raw[0]}); break;
    case 2: r.record(kind, 5, {raw[0], raw[1]}); break;
    case 3: r.record(kind, 5, {raw[0], raw[1], raw[2]}); break;
    default: r.record(kind, 5, {raw[0], raw[1], raw[2], raw[3]}); break;
    }
    return b;
}

std::string trim(const std::string& s) {
    const auto a = s.find_first_not_of(' ');
    const auto z = s.find_last_not_of(' ');
    return a == std::string::npos ? std::string() : s.substr(a, z - a + 1);
}

std::vector<std::string> split(const std::string& s, const std::string& by) {
    std::vector<std::string> out;
    std::size_t start = 0;
    for (std::size_t at; (at = s.find(by, start)) != std::string::npos; start = at + by.size()) out.push_back(s.substr(start, at - start));
    out.push_back(s.substr(start));
    return out;
}

} // namespace

TEST_CASE("every record kind decodes with exactly the table's fields", "[reader][records]") {
    for (unsigned k = 1; k <= kMaxEventKind; ++k) {
        const RecordKindInfo& info = kRecordKinds[k];
        if (info.special) continue;
        INFO(info.name);
        Trace trace;
        ReadError error;
        const bool read = parse(oneRecord(info.kind, rawFields(info)), trace, error);
        INFO(error.text());
        REQUIRE(read);
        REQUIRE(trace.events.size() == 1);
        const Event& e = trace.events[0];
        CHECK(e.kind == info.kind);
        CHECK(e.time == 5);
        int slots = 0;
        bool small = false;
        for (int f = 0; f < info.field_count; ++f) {
            INFO("field " << info.fields[f].name);
            CHECK(fieldValue(e, f) == sampleValue(info, f));
            if (eventSlot(info, f) < 0) small = true;
            else ++slots;
        }
        // Nothing beyond the table's fields.
        for (int s = slots; s < 3; ++s) CHECK(e.arg[s] == 0);
        if (!small) CHECK(e.small == 0);
        // A fiber filter sees the table's fiber fields, in order.
        std::uint64_t fibers[3];
        const std::size_t n = fiberFields(e, fibers);
        std::size_t expected = 0;
        for (int f = 0; f < info.field_count; ++f)
            if (info.fields[f].type == FieldType::Fiber) {
                REQUIRE(expected < n);
                CHECK(fibers[expected++] == sampleValue(info, f));
            }
        CHECK(n == expected);
    }
}

TEST_CASE("a record short of a field, or with a value past its range, is refused", "[reader][records]") {
    for (unsigned k = 1; k <= kMaxEventKind; ++k) {
        const RecordKindInfo& info = kRecordKinds[k];
        if (info.special || info.field_count == 0) continue;
        INFO(info.name);
        std::vector<std::uint64_t> raw = rawFields(info);
        raw.pop_back();
        Trace trace;
        ReadError error;
        CHECK_FALSE(parse(oneRecord(info.kind, raw), trace, error));
        CHECK(error.message.find(info.name) != std::string::npos);
        for (int f = 0; f < info.field_count; ++f) {
            const FieldType t = info.fields[f].type;
            if (t != FieldType::Enum && t != FieldType::Worker && t != FieldType::WorkerPlusOne) continue;
            INFO("field " << info.fields[f].name);
            raw = rawFields(info);
            raw[static_cast<std::size_t>(f)] = t == FieldType::Enum ? info.fields[f].max + 1u : kMaxWorkerField + 1;
            CHECK_FALSE(parse(oneRecord(info.kind, raw), trace, error));
            CHECK(error.message.find(info.name) != std::string::npos);
        }
    }
}

TEST_CASE("the emitters write every kind in the table's order", "[tracer][records]") {
    const std::string path = "/tmp/fiberscope-records-" + std::to_string(getpid()) + ".fstrace";
    int x = 0, y = 0, z = 0, w = 0; // objects: their addresses
    const auto id = [](const void* p) { return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p)); };
    // What each record's fields should read back as (strings by their text).
    struct Expect {
        EventKind kind;
        std::vector<std::uint64_t> values; // per table field; strings: ignored
        std::vector<std::string> strings;  // per String field, in order
    };
    // The lines of the mark("begin") and Zone zone("zone") below.
    const std::uint64_t kMarkLine = __LINE__ + 38, kZoneLine = __LINE__ + 60;
    const std::vector<Expect> expected = {
        {EventKind::Mark, {0}, {"begin"}},
        {EventKind::SourceLocation, {0, kMarkLine}, {__FILE__}},
        {EventKind::ThreadStart, {9, 0}, {"a thread"}},
        {EventKind::FiberCreate, {20, 2, 0}, {""}},
        {EventKind::FiberName, {20, 0}, {"named"}},
        {EventKind::Switch, {2, 20, static_cast<std::uint8_t>(SwitchReason::IoWait)}, {}},
        {EventKind::Schedule, {21, 3, 4, static_cast<std::uint8_t>(ScheduleHow::NewWorker)}, {}},
        {EventKind::Steal, {22, 5}, {}},
        {EventKind::WakeupSent, {6}, {}},
        {EventKind::WakeupReceived, {7}, {}},
        {EventKind::Park, {}, {}},
        {EventKind::Unpark, {8}, {}},
        {EventKind::Submit, {23, 22, static_cast<std::uint64_t>(std::int64_t{-100})}, {}},
        {EventKind::Complete, {23, 22, static_cast<std::uint64_t>(std::int64_t{-125})}, {}},
        {EventKind::CancelRequest, {24, 3}, {}},
        {EventKind::CancelDelivered, {24}, {}},
        {EventKind::MutexContended, {25, id(&x)}, {}},
        {EventKind::MutexHandoff, {26, 25, id(&x)}, {}},
        {EventKind::ConditionWait, {27, id(&y)}, {}},
        {EventKind::ConditionWake, {27, id(&y), static_cast<std::uint8_t>(ConditionWakeHow::TimedOut)}, {}},
        {EventKind::Await, {28, 29}, {}},
        {EventKind::GroupOp, {static_cast<std::uint8_t>(GroupOp::Cancel), id(&z), 30}, {}},
        {EventKind::QueueOp, {static_cast<std::uint8_t>(QueueOp::GetBlocked), id(&w), 31}, {}},
        {EventKind::ZoneBegin, {0}, {"zone"}},
        {EventKind::SourceLocation, {0, kZoneLine}, {__FILE__}},
        {EventKind::ZoneEnd, {}, {}},
        {EventKind::SourceLocation, {0, 77}, {"elsewhere.cpp"}},
        {EventKind::FiberFinish, {20}, {}},
        {EventKind::FiberRecycle, {20}, {}},
        {EventKind::ThreadStop, {}, {}},
    };
    {
        Recorder recorder(path);
        REQUIRE(recorder.ok());
        // On a thread of its own, so that its records are a chunk of their own.
        std::thread([&] {
            mark("begin"); // kMarkLine
            emit::threadStart(now(), 9, "a thread");
            emit::fiberCreate(now(), 20, 2);
            emit::fiberName(now(), 20, "named");
            emit::switchTo(now(), 2, 20, SwitchReason::IoWait);
            emit::schedule(now(), 21, 3, 4, ScheduleHow::NewWorker);
            emit::steal(now(), 22, 5);
            emit::wakeupSent(now(), 6);
            emit::wakeupReceived(now(), 7);
            emit::park(now());
            emit::unpark(now(), 8);
            emit::submit(now(), 23, 22, -100);
            emit::complete(now(), 23, 22, -125);
            emit::cancelRequest(now(), 24, 3);
            emit::cancelDelivered(now(), 24);
            emit::mutexContended(now(), 25, &x);
            emit::mutexHandoff(now(), 26, 25, &x);
            emit::conditionWait(now(), 27, &y);
            emit::conditionWake(now(), 27, &y, ConditionWakeHow::TimedOut);
            emit::await(now(), 28, 29);
            emit::groupOp(now(), GroupOp::Cancel, &z, 30);
            emit::queueOp(now(), QueueOp::GetBlocked, &w, 31);
            { Zone zone("zone"); }
            emit::sourceLocation(now(), internStable(threadBuffer(), "elsewhere.cpp"), 77);
            emit::fiberFinish(now(), 20);
            emit::fiberRecycle(now(), 20);
            emit::threadStop(now());
        }).join();
    }
    const Trace trace = test::readRecordedTrace(path);
    // The thread's records, from its "begin" mark on.
    std::vector<Event> mine;
    for (const Event& e : trace.events) {
        if (mine.empty() && !(e.kind == EventKind::Mark && trace.string(e.arg[0]) == "begin")) continue;
        if (e.thread == (mine.empty() ? e.thread : mine.front().thread)) mine.push_back(e);
    }
    REQUIRE(mine.size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        const Event& e = mine[i];
        const RecordKindInfo& info = recordKind(e.kind);
        INFO(i << ": " << info.name);
        REQUIRE(e.kind == expected[i].kind);
        REQUIRE(info.field_count == expected[i].values.size());
        std::size_t strings = 0;
        for (int f = 0; f < info.field_count; ++f) {
            INFO("field " << info.fields[f].name);
            if (info.fields[f].type == FieldType::String) {
                REQUIRE(strings < expected[i].strings.size());
                CHECK(trace.string(fieldValue(e, f)) == expected[i].strings[strings++]);
            } else {
                CHECK(fieldValue(e, f) == expected[i].values[static_cast<std::size_t>(f)]);
            }
        }
        CHECK(strings == expected[i].strings.size());
    }
}

TEST_CASE("FORMAT.md's record table names the table's kinds and fields", "[records]") {
    std::ifstream in(FIBERSCOPE_FORMAT_MD);
    REQUIRE(in);
    std::stringstream text;
    text << in.rdbuf();
    const std::string doc = text.str();
    std::vector<bool> seen(kMaxEventKind + 1, false);
    std::istringstream lines(doc);
    const std::regex row(R"(^\| (\d+) \| ([a-z-]+) \| ([^|]*) \|)");
    for (std::string line; std::getline(lines, line);) {
        std::smatch m;
        if (!std::regex_search(line, m, row)) continue;
        const unsigned kind = static_cast<unsigned>(std::stoul(m[1]));
        INFO(line);
        REQUIRE(kind >= 1);
        REQUIRE(kind <= kMaxEventKind);
        CHECK_FALSE(seen[kind]);
        seen[kind] = true;
        const RecordKindInfo& info = kRecordKinds[kind];
        CHECK(m[2] == info.name);
        const std::string fields = trim(m[3]);
        std::vector<std::string> listed;
        if (fields != "\xE2\x80\x94") listed = split(fields, ", "); // an em dash: none
        REQUIRE(listed.size() == info.field_count);
        for (std::size_t f = 0; f < listed.size(); ++f) {
            const FieldInfo& field = info.fields[f];
            const auto colon = listed[f].find(':');
            const std::string name = listed[f].substr(0, colon);
            const std::string type = colon == std::string::npos ? name : listed[f].substr(colon + 1);
            INFO("field " << f << ": " << listed[f]);
            CHECK(name == field.name);
            // Where FORMAT.md gives a type (or the name is one), it is the table's.
            if (type == "fiber") CHECK(field.type == FieldType::Fiber);
            else if (type == "worker") CHECK(field.type == FieldType::Worker);
            else if (type == "string") CHECK(field.type == FieldType::String);
            else if (type == "object") CHECK(field.type == FieldType::Object);
            else if (type == "zigzag") CHECK(field.type == FieldType::Signed);
            else if (type == "count") CHECK(field.type == FieldType::Count);
            else if (type == "opcode") CHECK(field.type == FieldType::Opcode);
        }
    }
    for (unsigned k = 1; k <= kMaxEventKind; ++k) {
        INFO(kRecordKinds[k].name);
        CHECK(seen[k]);
    }
    // The switch reasons, as FORMAT.md lists them ("0 start, 1 yield, ...").
    const auto at = doc.find("Switch reasons:");
    REQUIRE(at != std::string::npos);
    const std::string reasons = doc.substr(at, doc.find("\n\n", at) - at);
    const std::regex reason(R"((\d+) ([a-z-]+))");
    unsigned listed = 0;
    for (auto it = std::sregex_iterator(reasons.begin(), reasons.end(), reason); it != std::sregex_iterator(); ++it) {
        const unsigned value = static_cast<unsigned>(std::stoul((*it)[1]));
        REQUIRE(value <= kMaxSwitchReason);
        CHECK((*it)[2] == kSwitchReasonNames[value]);
        ++listed;
    }
    CHECK(listed == kMaxSwitchReason + 1u);
}
