// Random fiber programs (program.hpp): the task kinds, their generation,
// their text form, and the interpreter that runs them on the public API.
//
// [SECTION] The task table: each kind's parameters and its body
// [SECTION] Generation, text, shrinking
// [SECTION] The interpreter
#include "program.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>

#include <fiberscope/fiberscope.hpp>

namespace random_programs {

using namespace fiberscope;
using namespace std::chrono_literals;

namespace {

// What a task's fibers share: the loop, and where a check failure goes.
struct Ctx {
    EventLoop& loop;
    std::mutex mutex; // (an OS mutex: failures may be reported from any worker)
    std::string failure;
    std::atomic<unsigned> serial{0}; // for unique file names
    void fail(const std::string& what) {
        std::lock_guard lock(mutex);
        if (failure.empty()) failure = what;
    }
};

using Params = std::map<std::string, int>;

struct Param {
    const char* name;
    int min, max;
};

struct Kind {
    const char* name;
    std::vector<Param> params;
    void (*body)(Ctx&, const Params&, const std::string& where);
};

int get(const Params& p, const char* name) {
    auto it = p.find(name);
    return it == p.end() ? 0 : it->second;
}

std::string statusText(const Status& s) { return s ? "ok" : std::string(s.error().name()); }

// Work between steps: nothing, a few yields, or a short sleep.
void work(EventLoop& loop, int how) {
    if (how == 1) {
        for (int i = 0; i < 3; ++i) loop.yield();
    } else if (how == 2) {
        (void)loop.sleep(30us);
    }
}

// [SECTION] The task table ------------------------------------------------------

long spawnNode(EventLoop& loop, int depth, int width, int how, bool use_select) {
    if (depth == 0) {
        work(loop, how);
        return 1;
    }
    std::vector<Future<long>> kids;
    for (int i = 0; i < width; ++i)
        kids.push_back(loop.async([&loop, depth, width, how, use_select] { return spawnNode(loop, depth - 1, width, how, use_select); }));
    long total = 1;
    if (use_select && kids.size() >= 2) (void)select(kids[0], kids[1]);
    for (auto& k : kids) total += k.await();
    return total;
}

// A tree of spawns, each node awaiting its children (some first through a select).
void taskSpawn(Ctx& c, const Params& p, const std::string& where) {
    const int depth = get(p, "depth"), width = get(p, "width");
    const long got = spawnNode(c.loop, depth, width, get(p, "work"), get(p, "select") != 0);
    long expected = 0;
    for (long level = 1, i = 0; i <= depth; ++i, level *= width) expected += level;
    if (got != expected) c.fail(where + ": the spawn tree counted " + std::to_string(got) + " nodes, not " + std::to_string(expected));
}

// Fibers incrementing a counter under a Mutex, yielding inside the critical section.
void taskMutex(Ctx& c, const Params& p, const std::string& where) {
    Mutex mutex;
    long counter = 0;
    const int fibers = get(p, "fibers"), rounds = get(p, "rounds"), hold = get(p, "hold");
    std::vector<Future<void>> fs;
    for (int f = 0; f < fibers; ++f)
        fs.push_back(c.loop.async([&] {
            for (int r = 0; r < rounds; ++r) {
                if (r % 3 == 2) {
                    mutex.lockUncancelable();
                } else if (Status s = mutex.lock(); !s) {
                    c.fail(where + ": Mutex::lock returned " + statusText(s));
                    return;
                }
                const long seen = counter;
                work(c.loop, hold);
                counter = seen + 1;
                mutex.unlock();
            }
        }));
    for (auto& f : fs) f.await();
    if (counter != static_cast<long>(fibers) * rounds)
        c.fail(where + ": the counter under the mutex is " + std::to_string(counter) + ", not " + std::to_string(fibers * rounds));
}

// Fibers taking turns through a Condition and a predicate (waits without a
// timeout: a turn always comes).
void taskCondition(Ctx& c, const Params& p, const std::string& where) {
    Mutex mutex;
    Condition turn_changed;
    const int sides = get(p, "sides"), rounds = get(p, "rounds"), broadcast = get(p, "broadcast");
    int turn = 0;
    long moves = 0;
    std::vector<Future<void>> fs;
    for (int side = 0; side < sides; ++side)
        fs.push_back(c.loop.async([&, side] {
            for (int r = 0; r < rounds; ++r) {
                mutex.lockUncancelable();
                while (turn != side) turn_changed.waitUncancelable(mutex);
                ++moves;
                turn = (turn + 1) % sides;
                mutex.unlock();
                // With two sides only the other can be waiting: a signal
                // reaches it. With more, a signal might wake the wrong one.
                if (sides == 2 && !broadcast) turn_changed.signal();
                else turn_changed.broadcast();
            }
        }));
    for (auto& f : fs) f.await();
    if (moves != static_cast<long>(sides) * rounds) c.fail(where + ": " + std::to_string(moves) + " turns taken");
}

// Producers and consumers through a bounded Queue, closed when the producers are done.
void taskQueue(Ctx& c, const Params& p, const std::string& where) {
    Queue<int> queue(static_cast<std::size_t>(get(p, "capacity")));
    const int producers = get(p, "producers"), consumers = get(p, "consumers"), items = get(p, "items");
    std::atomic<long> sum{0}, got{0};
    std::vector<Future<void>> makers, takers;
    for (int f = 0; f < producers; ++f)
        makers.push_back(c.loop.async([&, f] {
            for (int i = 0; i < items; ++i)
                if (Status s = queue.put(f * 1000 + i); !s) c.fail(where + ": Queue::put returned " + statusText(s));
        }));
    for (int f = 0; f < consumers; ++f)
        takers.push_back(c.loop.async([&] {
            for (;;) {
                Result<int> item = queue.get();
                if (!item) {
                    if (item.error() != Errc::Closed) c.fail(where + ": Queue::get returned " + std::string(item.error().name()));
                    return;
                }
                sum += *item;
                ++got;
            }
        }));
    for (auto& f : makers) f.await();
    queue.close();
    for (auto& f : takers) f.await();
    long expected = 0;
    for (int f = 0; f < producers; ++f)
        for (int i = 0; i < items; ++i) expected += f * 1000 + i;
    if (got != static_cast<long>(producers) * items || sum != expected)
        c.fail(where + ": " + std::to_string(got.load()) + " items came through the queue");
}

// Waiters on an Event (no timeout), set once after a delay.
void taskEvent(Ctx& c, const Params& p, const std::string& where) {
    Event event;
    const int waiters = get(p, "waiters");
    std::atomic<int> woken{0};
    std::vector<Future<void>> fs;
    for (int w = 0; w < waiters; ++w)
        fs.push_back(c.loop.async([&] {
            if (Status s = event.wait(); !s) c.fail(where + ": Event::wait returned " + statusText(s));
            ++woken;
        }));
    (void)c.loop.sleep(std::chrono::microseconds(get(p, "delay_us")));
    event.set();
    for (auto& f : fs) f.await();
    if (woken != waiters) c.fail(where + ": " + std::to_string(woken.load()) + " waiters woken");
}

// Fibers sharing a Semaphore's permits: never more holders than permits.
void taskSemaphore(Ctx& c, const Params& p, const std::string& where) {
    const int permits = get(p, "permits"), fibers = get(p, "fibers"), rounds = get(p, "rounds");
    Semaphore semaphore(static_cast<std::size_t>(permits));
    std::atomic<int> holders{0};
    std::vector<Future<void>> fs;
    for (int f = 0; f < fibers; ++f)
        fs.push_back(c.loop.async([&] {
            for (int r = 0; r < rounds; ++r) {
                if (Status s = semaphore.wait(); !s) {
                    c.fail(where + ": Semaphore::wait returned " + statusText(s));
                    return;
                }
                if (++holders > permits) c.fail(where + ": more holders than permits");
                c.loop.yield();
                --holders;
                semaphore.post();
            }
        }));
    for (auto& f : fs) f.await();
}

// Readers and writers of an RwLock: no reader beside a writer, one writer at a time.
void taskRwLock(Ctx& c, const Params& p, const std::string& where) {
    RwLock lock;
    std::atomic<int> readers{0}, writers{0};
    const int nr = get(p, "readers"), nw = get(p, "writers"), rounds = get(p, "rounds");
    std::vector<Future<void>> fs;
    for (int r = 0; r < nr; ++r)
        fs.push_back(c.loop.async([&] {
            for (int i = 0; i < rounds; ++i) {
                if (Status s = lock.lockShared(); !s) {
                    c.fail(where + ": RwLock::lockShared returned " + statusText(s));
                    return;
                }
                ++readers;
                if (writers != 0) c.fail(where + ": a reader beside a writer");
                c.loop.yield();
                --readers;
                lock.unlockShared();
            }
        }));
    for (int w = 0; w < nw; ++w)
        fs.push_back(c.loop.async([&] {
            for (int i = 0; i < rounds; ++i) {
                if (Status s = lock.lock(); !s) {
                    c.fail(where + ": RwLock::lock returned " + statusText(s));
                    return;
                }
                if (++writers != 1 || readers != 0) c.fail(where + ": a writer beside another, or beside a reader");
                c.loop.yield();
                --writers;
                lock.unlock();
            }
        }));
    for (auto& f : fs) f.await();
}

// Waits that nobody ends: each must come back TimedOut after its timeout.
void taskTimed(Ctx& c, const Params& p, const std::string& where) {
    const auto timeout = std::chrono::microseconds(get(p, "timeout_us"));
    const int what = get(p, "what");
    Mutex mutex;
    Condition condition;
    Queue<int> queue(1);
    Event event;
    Semaphore semaphore(0);
    RwLock rw;
    // The RwLock case waits for a writer that holds it across the waits.
    rw.lockUncancelable();
    std::vector<Future<Status>> fs;
    for (int f = 0; f < get(p, "fibers"); ++f)
        fs.push_back(c.loop.async([&, f]() -> Status {
            switch ((what + f) % 5) {
            case 0: {
                mutex.lockUncancelable();
                Status s = condition.wait(mutex, timeout);
                mutex.unlock();
                return s;
            }
            case 1: {
                Result<int> r = queue.get(timeout);
                return r ? Status() : Status(r.error());
            }
            case 2: return event.wait(timeout);
            case 3: return semaphore.wait(timeout);
            default: return rw.lockShared(timeout);
            }
        }));
    for (auto& f : fs) {
        const Status s = f.await();
        if (s || s.error() != Errc::TimedOut) c.fail(where + ": a wait nobody ends returned " + statusText(s) + ", not TimedOut");
    }
    rw.unlock();
}

// Fibers blocked where only a cancel ends their wait, then canceled.
void taskCancel(Ctx& c, const Params& p, const std::string& where) {
    const int what = get(p, "what");
    Mutex mutex, condition_mutex;
    Condition condition;
    Queue<int> queue(1);
    Event event;
    Semaphore semaphore(0);
    RwLock rw;
    int fds[2] = {-1, -1};
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        c.fail(where + ": pipe2 failed");
        return;
    }
    mutex.lockUncancelable(); // held across the waits (kind 0)
    rw.lockUncancelable();    // likewise (kind 5)
    std::vector<Future<Status>> fs;
    const int fibers = get(p, "fibers");
    for (int f = 0; f < fibers; ++f)
        fs.push_back(c.loop.async([&, f]() -> Status {
            switch ((what + f) % 9) {
            case 0: {
                Status s = mutex.lock();
                if (s) mutex.unlock();
                return s;
            }
            case 1: {
                condition_mutex.lockUncancelable();
                Status s = condition.wait(condition_mutex);
                condition_mutex.unlock();
                return s;
            }
            case 2: {
                Result<int> r = queue.get();
                return r ? Status() : Status(r.error());
            }
            case 3: return event.wait();
            case 4: return semaphore.wait();
            case 5: {
                Status s = rw.lockShared();
                if (s) rw.unlockShared();
                return s;
            }
            case 6: return c.loop.sleep(10s);
            case 7: {
                std::byte buffer[8];
                Result<std::size_t> r = c.loop.read(File{fds[0]}, buffer);
                return r ? Status() : Status(r.error());
            }
            default: {
                // A select over fibers that sleep long: the select is the cancel point.
                auto a = c.loop.async([&] { (void)c.loop.sleep(10s); });
                auto b = c.loop.async([&] { (void)c.loop.sleep(10s); });
                Result<std::size_t> r = select(a, b);
                a.cancel();
                b.cancel();
                return r ? Status() : Status(r.error());
            }
            }
        }));
    (void)c.loop.sleep(std::chrono::microseconds(get(p, "delay_us")));
    for (auto& f : fs) {
        const Status s = f.cancel();
        if (s || s.error() != Errc::Canceled) c.fail(where + ": a canceled wait returned " + statusText(s) + ", not Canceled");
    }
    rw.unlock();
    mutex.unlock();
    ::close(fds[0]);
    ::close(fds[1]);
}

// A fiber awaiting a fiber blocked in a wait only a cancel ends, one or two
// awaits deep; canceling the outer one passes the cancel on (teardown must end).
void taskNestedCancel(Ctx& c, const Params& p, const std::string& where) {
    Queue<int> queue(1);
    const int depth = get(p, "depth");
    std::function<Status(int)> level = [&](int d) -> Status {
        if (d == 0) {
            Result<int> r = queue.get();
            return r ? Status() : Status(r.error());
        }
        auto inner = c.loop.async([&level, d] { return level(d - 1); });
        return inner.await();
    };
    auto outer = c.loop.async([&] { return level(depth); });
    (void)c.loop.sleep(std::chrono::microseconds(get(p, "delay_us")));
    const Status s = outer.cancel();
    if (s || s.error() != Errc::Canceled) c.fail(where + ": a canceled await returned " + statusText(s) + ", not Canceled");
}

// The first of several sleepers through select, the others canceled.
void taskSelect(Ctx& c, const Params& p, const std::string& where) {
    std::vector<Future<int>> fs;
    const int n = get(p, "fibers");
    for (int i = 0; i < n; ++i)
        fs.push_back(c.loop.async([&c, i] {
            (void)c.loop.sleep(std::chrono::microseconds(50 + 200 * i));
            return i;
        }));
    Result<std::size_t> first = select(std::span<Future<int>>(fs));
    if (!first) c.fail(where + ": select returned " + std::string(first.error().name()));
    for (auto& f : fs) (void)f.cancel();
}

// A Group of members, waited for or canceled.
void taskGroup(Ctx& c, const Params& p, const std::string& where) {
    Group group(c.loop);
    std::atomic<int> done{0};
    const int members = get(p, "members"), cancel = get(p, "cancel");
    for (int m = 0; m < members; ++m)
        group.async([&c, &done, m, cancel]() -> Status {
            Status s = c.loop.sleep(cancel ? 10s : std::chrono::microseconds(20 * m));
            ++done;
            return s;
        });
    const Status s = cancel ? group.cancel() : group.wait();
    if (!s) c.fail(where + ": the group returned " + statusText(s));
    if (done != members) c.fail(where + ": " + std::to_string(done.load()) + " members done");
}

// Bytes through a pipe, written and read by two fibers.
void taskPipe(Ctx& c, const Params& p, const std::string& where) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        c.fail(where + ": pipe2 failed");
        return;
    }
    const std::size_t bytes = static_cast<std::size_t>(get(p, "bytes"));
    auto writer = c.loop.async([&] {
        std::vector<std::byte> chunk(std::min<std::size_t>(bytes, 1024), std::byte{7});
        std::size_t sent = 0;
        while (sent < bytes) {
            const std::size_t n = std::min(chunk.size(), bytes - sent);
            Result<std::size_t> w = c.loop.write(File{fds[1]}, std::span<const std::byte>(chunk.data(), n));
            if (!w) {
                c.fail(where + ": write returned " + std::string(w.error().name()));
                break;
            }
            sent += *w;
        }
        (void)c.loop.close(File{fds[1]});
    });
    std::size_t got = 0;
    std::byte buffer[512];
    for (;;) {
        Result<std::size_t> r = c.loop.read(File{fds[0]}, buffer);
        if (!r) {
            c.fail(where + ": read returned " + std::string(r.error().name()));
            break;
        }
        if (*r == 0) break;
        got += *r;
    }
    writer.await();
    (void)c.loop.close(File{fds[0]});
    if (got != bytes) c.fail(where + ": " + std::to_string(got) + " bytes came through the pipe");
}

// A file written and read back.
void taskFile(Ctx& c, const Params& p, const std::string& where) {
    const std::string path = "/tmp/fiberscope-random-" + std::to_string(::getpid()) + "-" + std::to_string(c.serial++);
    Result<File> file = c.loop.createFile(path, {.read = true});
    if (!file) {
        c.fail(where + ": createFile returned " + std::string(file.error().name()));
        return;
    }
    const std::size_t size = static_cast<std::size_t>(get(p, "bytes"));
    std::vector<std::byte> out(size), in(size);
    for (std::size_t i = 0; i < size; ++i) out[i] = static_cast<std::byte>(i * 31);
    Result<std::size_t> w = c.loop.pwrite(*file, out, 0);
    Result<std::size_t> r = c.loop.pread(*file, in, 0);
    if (!w || !r || *w != size || *r != size || in != out) c.fail(where + ": the file did not read back what was written");
    (void)c.loop.close(*file);
    (void)c.loop.deleteFile(path);
}

// Messages echoed over a loopback TCP connection.
void taskSocket(Ctx& c, const Params& p, const std::string& where) {
    Result<Address> any = Address::parse("127.0.0.1:0");
    Result<Socket> listener = any ? c.loop.listenOn(*any) : Result<Socket>(any.error());
    Result<Address> at = listener ? c.loop.localAddress(*listener) : Result<Address>(listener.error());
    if (!at) {
        c.fail(where + ": no loopback listener");
        return;
    }
    const int messages = get(p, "messages");
    auto server = c.loop.async([&] {
        Result<Socket> peer = c.loop.accept(*listener, nullptr, 5s);
        if (!peer) {
            c.fail(where + ": accept returned " + std::string(peer.error().name()));
            return;
        }
        std::byte buffer[64];
        for (;;) {
            Result<std::size_t> r = c.loop.recv(*peer, buffer, 5s);
            if (!r || *r == 0) break;
            if (!c.loop.sendAll(*peer, std::span<const std::byte>(buffer, *r), 5s)) break;
        }
        (void)c.loop.close(*peer);
    });
    Result<Socket> client = c.loop.connectTo(*at, 5s);
    if (!client) {
        c.fail(where + ": connect returned " + std::string(client.error().name()));
    } else {
        for (int m = 0; m < messages; ++m) {
            std::byte message[16];
            std::memset(message, m, sizeof message);
            std::byte back[16];
            std::size_t got = 0;
            if (!c.loop.sendAll(*client, message, 5s)) {
                c.fail(where + ": send failed");
                break;
            }
            while (got < sizeof back) {
                Result<std::size_t> r = c.loop.recv(*client, std::span<std::byte>(back + got, sizeof back - got), 5s);
                if (!r || *r == 0) break;
                got += *r;
            }
            if (got != sizeof back || std::memcmp(back, message, sizeof back) != 0) {
                c.fail(where + ": the echo came back wrong");
                break;
            }
        }
        (void)c.loop.shutdown(*client);
        (void)c.loop.close(*client);
    }
    server.await();
    (void)c.loop.close(*listener);
}

// Detached fibers counting, watched until all have run.
void taskDetached(Ctx& c, const Params& p, const std::string& where) {
    auto count = std::make_shared<std::atomic<int>>(0);
    const int fibers = get(p, "fibers");
    for (int f = 0; f < fibers; ++f)
        c.loop.asyncDetached([&loop = c.loop, count] {
            loop.yield();
            ++*count;
        });
    for (int i = 0; i < 20000 && *count < fibers; ++i) (void)c.loop.sleep(100us);
    if (*count != fibers) c.fail(where + ": " + std::to_string(count->load()) + " detached fibers ran");
}

// A cancel that arrives inside a CancelProtection scope takes effect at the
// first cancel point after it.
void taskProtect(Ctx& c, const Params& p, const std::string& where) {
    std::atomic<bool> inside_ok{false};
    auto f = c.loop.async([&]() -> Status {
        {
            CancelProtection protect;
            inside_ok = static_cast<bool>(c.loop.sleep(std::chrono::microseconds(get(p, "sleep_us"))));
        }
        return c.loop.sleep(10s);
    });
    (void)c.loop.sleep(20us);
    const Status s = f.cancel();
    if (!inside_ok) c.fail(where + ": a sleep inside CancelProtection was interrupted");
    if (s || s.error() != Errc::Canceled) c.fail(where + ": the sleep after the scope returned " + statusText(s));
}

// Fibers that yield in turns.
void taskYield(Ctx& c, const Params& p, const std::string&) {
    std::vector<Future<void>> fs;
    for (int f = 0; f < get(p, "fibers"); ++f)
        fs.push_back(c.loop.async([&c, rounds = get(p, "rounds")] {
            for (int r = 0; r < rounds; ++r) c.loop.yield();
        }));
    for (auto& f : fs) f.await();
}

const std::vector<Kind>& table() {
    static const std::vector<Kind> kinds = {
        {"spawn", {{"depth", 1, 4}, {"width", 1, 4}, {"work", 0, 2}, {"select", 0, 1}}, taskSpawn},
        {"mutex", {{"fibers", 1, 6}, {"rounds", 1, 20}, {"hold", 0, 2}}, taskMutex},
        {"condition", {{"sides", 2, 4}, {"rounds", 1, 15}, {"broadcast", 0, 1}}, taskCondition},
        {"queue", {{"producers", 1, 4}, {"consumers", 1, 4}, {"items", 1, 30}, {"capacity", 1, 4}}, taskQueue},
        {"event", {{"waiters", 1, 6}, {"delay_us", 0, 300}}, taskEvent},
        {"semaphore", {{"permits", 1, 3}, {"fibers", 1, 6}, {"rounds", 1, 10}}, taskSemaphore},
        {"rwlock", {{"readers", 0, 4}, {"writers", 1, 3}, {"rounds", 1, 10}}, taskRwLock},
        {"timed", {{"fibers", 1, 5}, {"what", 0, 4}, {"timeout_us", 50, 400}}, taskTimed},
        {"cancel", {{"fibers", 1, 9}, {"what", 0, 8}, {"delay_us", 0, 300}}, taskCancel},
        {"nested-cancel", {{"depth", 1, 2}, {"delay_us", 0, 200}}, taskNestedCancel},
        {"select", {{"fibers", 1, 4}}, taskSelect},
        {"group", {{"members", 1, 5}, {"cancel", 0, 1}}, taskGroup},
        {"pipe", {{"bytes", 1, 5000}}, taskPipe},
        {"file", {{"bytes", 1, 8192}}, taskFile},
        {"socket", {{"messages", 1, 8}}, taskSocket},
        {"detached", {{"fibers", 1, 6}}, taskDetached},
        {"protect", {{"sleep_us", 20, 300}}, taskProtect},
        {"yield", {{"fibers", 1, 5}, {"rounds", 1, 30}}, taskYield},
    };
    return kinds;
}

const Kind* findKind(std::string_view name) {
    for (const Kind& k : table())
        if (name == k.name) return &k;
    return nullptr;
}

} // namespace

// [SECTION] Generation, text, shrinking -------------------------------------------

const std::vector<std::string>& kinds() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> out;
        for (const Kind& k : table()) out.emplace_back(k.name);
        return out;
    }();
    return names;
}

Program generate(std::uint64_t seed, int max_tasks) {
    std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 35);
    const auto pick = [&](int lo, int hi) { return lo + static_cast<int>(rng() % static_cast<std::uint64_t>(hi - lo + 1)); };
    Program program;
    const int tasks = pick(1, max_tasks);
    for (int t = 0; t < tasks; ++t) {
        const Kind& kind = table()[rng() % table().size()];
        Task task;
        task.kind = kind.name;
        for (const Param& param : kind.params) task.params[param.name] = pick(param.min, param.max);
        program.tasks.push_back(std::move(task));
    }
    return program;
}

std::string toText(const Program& program) {
    std::string out;
    for (const Task& task : program.tasks) {
        if (!out.empty()) out += ';';
        out += task.kind;
        char sep = ':';
        for (const auto& [name, value] : task.params) {
            out += sep;
            out += name + "=" + std::to_string(value);
            sep = ',';
        }
    }
    return out;
}

bool parse(std::string_view text, Program& out, std::string& error) {
    out.tasks.clear();
    std::stringstream tasks{std::string(text)};
    for (std::string item; std::getline(tasks, item, ';');) {
        if (item.empty()) continue;
        Task task;
        const auto colon = item.find(':');
        task.kind = item.substr(0, colon);
        const Kind* kind = findKind(task.kind);
        if (!kind) {
            error = "unknown task '" + task.kind + "'";
            return false;
        }
        for (const Param& param : kind->params) task.params[param.name] = param.min; // defaults
        if (colon != std::string::npos) {
            std::stringstream params(item.substr(colon + 1));
            for (std::string kv; std::getline(params, kv, ',');) {
                const auto eq = kv.find('=');
                const std::string name = kv.substr(0, eq);
                const auto it = std::find_if(kind->params.begin(), kind->params.end(), [&](const Param& p) { return name == p.name; });
                if (eq == std::string::npos || it == kind->params.end()) {
                    error = "task '" + task.kind + "' has no parameter '" + name + "'";
                    return false;
                }
                const int value = std::atoi(kv.c_str() + eq + 1);
                if (value < it->min || value > it->max) {
                    error = "task '" + task.kind + "': " + name + " must be " + std::to_string(it->min) + ".." + std::to_string(it->max);
                    return false;
                }
                task.params[name] = value;
            }
        }
        out.tasks.push_back(std::move(task));
    }
    if (out.tasks.empty()) {
        error = "no tasks";
        return false;
    }
    return true;
}

std::vector<Program> shrinkCandidates(const Program& program) {
    std::vector<Program> out;
    if (program.tasks.size() > 1)
        for (std::size_t t = 0; t < program.tasks.size(); ++t) {
            Program smaller = program;
            smaller.tasks.erase(smaller.tasks.begin() + static_cast<std::ptrdiff_t>(t));
            out.push_back(std::move(smaller));
        }
    for (std::size_t t = 0; t < program.tasks.size(); ++t) {
        const Kind* kind = findKind(program.tasks[t].kind);
        for (const Param& param : kind->params) {
            const int value = program.tasks[t].params.at(param.name);
            const int lower = std::max(param.min, std::min(value - 1, value / 2 > param.min ? value / 2 : value - 1));
            if (lower >= value) continue;
            Program smaller = program;
            smaller.tasks[t].params[param.name] = lower;
            out.push_back(std::move(smaller));
        }
    }
    return out;
}

// [SECTION] The interpreter --------------------------------------------------------

bool run(EventLoop& loop, const Program& program, std::string& failure) {
    Ctx ctx{loop, {}, {}, {}};
    std::vector<Future<void>> tasks;
    for (std::size_t t = 0; t < program.tasks.size(); ++t) {
        const Task& task = program.tasks[t];
        const Kind* kind = findKind(task.kind);
        const std::string where = "task " + std::to_string(t + 1) + " (" + task.kind + ")";
        tasks.push_back(loop.async([&ctx, kind, &task, where] { kind->body(ctx, task.params, where); }));
    }
    for (auto& t : tasks) t.await();
    failure = ctx.failure;
    return failure.empty();
}

} // namespace random_programs
