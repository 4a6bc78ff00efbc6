#include "test_support.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <deque>

using namespace fiberscope;

static long skynet(EventLoop& loop, long num, long size, long div) {
    if (size == 1) return num;
    std::vector<Future<long>> children;
    children.reserve(div);
    for (long i = 0; i < div; ++i) {
        long sub = num + i * (size / div);
        children.push_back(loop.async([&loop, sub, size, div] { return skynet(loop, sub, size / div, div); }));
    }
    long sum = 0;
    for (auto& c : children) sum += c.await();
    return sum;
}

TEST_CASE("skynet: 1M fibers on all threads return the right sum", "[stress]") {
    // 1M leaves; scaled down (to a power of ten, at least 1000) under the
    // sanitizers. ThreadSanitizer also caps live fibers at about 8000.
    long size = 1'000'000;
    while (size > 1000 && size > test::scaled(1'000'000)) size /= 10;
    auto loop = test::makeLoop(0);
    auto start = std::chrono::steady_clock::now();
    auto total = loop->async([&] { return skynet(*loop, 0, size, 10); });
    REQUIRE(total.await() == size * (size - 1) / 2);
    INFO("skynet " << size << " took " << test::secondsSince(start) << " s");
}

TEST_CASE("10k fibers incrementing under a Mutex give the exact count", "[stress][mutex]") {
    auto loop = test::makeLoop(4);
    Mutex mutex;
    long counter = 0; // deliberately not atomic: the mutex protects it
    const int fibers = static_cast<int>(std::max(1000L, test::scaled(10'000))), rounds = 10;
    for (int iteration = 0; iteration < test::scaled(5); ++iteration) {
        counter = 0;
        std::vector<Future<void>> all;
        all.reserve(fibers);
        for (int i = 0; i < fibers; ++i)
            all.push_back(loop->async([&] {
                for (int r = 0; r < rounds; ++r) {
                    std::lock_guard lock(mutex);
                    long seen = counter;
                    if (r % 3 == 0) loop->yield(); // hold the lock across a switch
                    counter = seen + 1;
                }
            }));
        for (auto& f : all) f.await();
        REQUIRE(counter == long(fibers) * rounds);
    }
}

TEST_CASE("producer/consumer on Condition loses no wakeup", "[stress][condition]") {
    auto loop = test::makeLoop(4);
    for (int iteration = 0; iteration < test::scaled(20); ++iteration) {
        Mutex mutex;
        Condition nonempty;
        std::deque<int> items; // FIFO: the stop marks come after all items
        std::atomic<int> wait_failures{0};
        const int producers = 4, consumers = 4, per_producer = 2000;
        std::atomic<long> consumed_sum{0};
        std::atomic<int> consumed{0};
        std::vector<Future<void>> all;
        for (int c = 0; c < consumers; ++c)
            all.push_back(loop->async([&] {
                for (;;) {
                    std::unique_lock lock(mutex);
                    while (items.empty())
                        if (!nonempty.wait(mutex)) ++wait_failures;
                    int item = items.front();
                    items.pop_front();
                    lock.unlock();
                    if (item < 0) return;
                    consumed_sum += item;
                    ++consumed;
                }
            }));
        std::vector<Future<void>> producing;
        for (int p = 0; p < producers; ++p)
            producing.push_back(loop->async([&] {
                for (int i = 1; i <= per_producer; ++i) {
                    {
                        std::lock_guard lock(mutex);
                        items.push_back(i);
                    }
                    nonempty.signal();
                    if (i % 64 == 0) loop->yield();
                }
            }));
        for (auto& f : producing) f.await();
        for (int c = 0; c < consumers; ++c) {
            {
                std::lock_guard lock(mutex);
                items.push_back(-1);
            }
            nonempty.signal();
        }
        for (auto& f : all) f.await();
        REQUIRE(wait_failures == 0);
        REQUIRE(consumed == producers * per_producer);
        REQUIRE(consumed_sum == long(producers) * per_producer * (per_producer + 1) / 2);
    }
}

namespace {

// ThreadSanitizer maps state of its own for every fiber it tracks.
#if defined(__SANITIZE_THREAD__)
constexpr bool kSanitizerMapsPerFiber = true;
#else
constexpr bool kSanitizerMapsPerFiber = false;
#endif

// Linux 6.13's guard markers (MADV_GUARD_INSTALL): guard pages that cost no
// memory mapping. Without them a guard page costs two mappings, and
// vm.max_map_count (65530 by default) caps guarded fibers at about 32k.
bool kernelHasGuardMarkers() {
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    void* probe = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (probe == MAP_FAILED) return false;
    const bool ok = madvise(probe, page, 102 /* MADV_GUARD_INSTALL */) == 0;
    munmap(probe, 2 * page);
    return ok;
}

// The process's memory mappings: what vm.max_map_count limits.
long mappingCount() {
    std::FILE* maps = std::fopen("/proc/self/maps", "r");
    if (!maps) return -1;
    long lines = 0;
    for (int c; (c = std::fgetc(maps)) != EOF;)
        if (c == '\n') ++lines;
    std::fclose(maps);
    return lines;
}

} // namespace

TEST_CASE("1M live fibers parked on a Queue and then released all complete", "[stress][limits]") {
    // 1M at once is 4x what vm.max_map_count allowed with a guard mapping per
    // stack. 16 KiB stacks (the smallest) keep it to about 4 GiB of memory:
    // a parked fiber touches only its top page. ThreadSanitizer allows about
    // 8000 fibers at once.
    long fibers = test::scaled(1'000'000);
#if defined(__SANITIZE_THREAD__)
    fibers = std::min(fibers, 4000L);
#endif
    const bool markers = kernelHasGuardMarkers();
    if (!markers)
        WARN("this kernel lacks guard markers (Linux 6.13+): a guard page would cost two mappings, so this "
             "runs with guard_pages = false (the README's Limits section says so)");
    auto made = EventLoop::create({.threads = 1, .stack_size = 16 * 1024, .guard_pages = markers});
    if (!made) FAIL("EventLoop::create failed: " << made.error().message());
    auto& loop = *made;

    const auto start = std::chrono::steady_clock::now();
    const long maps_before = mappingCount();
    Queue<long> queue(static_cast<std::size_t>(fibers)); // room for every item: put() never waits
    std::atomic<long> parked{0}, sum{0};
    std::vector<Future<void>> all;
    all.reserve(static_cast<std::size_t>(fibers));
    for (long i = 0; i < fibers; ++i) {
        auto started = loop->concurrent([&] {
            // relaxed: the main fiber only counts; the Queue's mutex orders
            // the items themselves.
            parked.fetch_add(1, std::memory_order_relaxed);
            if (auto item = queue.get()) sum.fetch_add(*item, std::memory_order_relaxed);
        });
        if (!started) FAIL("fiber " << i << " of " << fibers << " could not start: " << started.error().message());
        all.push_back(std::move(*started));
    }
    // Every fiber runs up to its get() and parks there (the queue is empty).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (parked.load(std::memory_order_relaxed) < fibers) {
        if (std::chrono::steady_clock::now() > deadline)
            FAIL("only " << parked.load() << " of " << fibers << " fibers reached Queue::get within 60 s");
        REQUIRE(loop->sleep(std::chrono::milliseconds(1)));
    }
    const long maps_parked = mappingCount();
    const double parked_after = test::secondsSince(start);
    for (long i = 0; i < fibers; ++i)
        if (!queue.put(i)) FAIL("put " << i << " failed");
    for (auto& f : all) f.await();
    INFO(fibers << " fibers: parked after " << parked_after << " s, all done after " << test::secondsSince(start)
                << " s; mappings " << maps_before << " -> " << maps_parked);
    REQUIRE(sum.load() == fibers * (fibers - 1) / 2);
    // The stacks did not cost a mapping each: slabs of ~16 MiB merge, and a
    // guard marker splits nothing.
    if (!kSanitizerMapsPerFiber) REQUIRE(maps_parked - maps_before < 64 + fibers / 256);
}

TEST_CASE("guard_pages = false: unguarded stacks cost one mapping per slab and run like any other", "[stress][limits]") {
    const long fibers = std::max(1000L, test::scaled(20'000));
    auto made = EventLoop::create({.threads = 2, .stack_size = 16 * 1024, .guard_pages = false});
    if (!made) FAIL("EventLoop::create failed: " << made.error().message());
    auto& loop = *made;
    const long maps_before = mappingCount();
    Queue<long> queue(static_cast<std::size_t>(fibers));
    std::vector<Future<long>> all;
    all.reserve(static_cast<std::size_t>(fibers));
    for (long i = 0; i < fibers; ++i) {
        auto started = loop->concurrent([&] { return queue.get().value(); });
        if (!started) FAIL("fiber " << i << " could not start: " << started.error().message());
        all.push_back(std::move(*started));
    }
    const long maps_spawned = mappingCount();
    for (long i = 0; i < fibers; ++i) REQUIRE(queue.put(i));
    long sum = 0;
    for (auto& f : all) sum += f.await();
    REQUIRE(sum == fibers * (fibers - 1) / 2);
    INFO("mappings " << maps_before << " -> " << maps_spawned);
    if (!kSanitizerMapsPerFiber) REQUIRE(maps_spawned - maps_before <= 8 + fibers / 256);
}

// Lesson 2's abort ("terminate called without an active exception", about
// 1 run in 15 on a loaded machine at --threads 4): the main fiber's last
// await was woken by a worker that started another worker for it, and the
// main fiber, already running on that new worker, destroyed the loop before
// the spawner raised Loop::active: the new worker was neither told to exit
// nor joined, and its std::thread was destroyed joinable. Many short loops
// whose last wake-up starts a worker, beside a process competing for the
// CPUs; each loop must shut down cleanly (a terminate kills the run).
TEST_CASE("a loop destroyed while a worker is being started still joins it", "[stress][shutdown]") {
    // The window is a few instructions wide; the runtime's fault injection
    // holds every spawner in it for 200 us (loop.hpp, test_spawn_delay_ns),
    // so a main fiber woken onto a worker being started destroys the loop
    // while its spawner has not yet counted it.
    setenv("FIBERSCOPE_TEST_SPAWN_DELAY_US", "200", 1);
    struct Unset {
        ~Unset() { unsetenv("FIBERSCOPE_TEST_SPAWN_DELAY_US"); }
    } unset;
    test::BusyCompetitor busy;
    test::Watchdog watchdog("100 loops of ping-pong on 4 threads, created and destroyed", std::chrono::seconds(120));
    const long loops = test::scaled(100);
    for (const SchedulerPolicy policy : {SchedulerPolicy::scaling, SchedulerPolicy::seed}) {
        INFO("policy " << schedulerPolicyName(policy));
        for (long i = 0; i < loops; ++i) {
            {
                // The narrowest case: the first spawn starts worker 1, whose
                // finish may start worker 2 for the main fiber, which then
                // destroys the loop at once.
                auto made = EventLoop::create({.threads = 4, .scheduler = policy});
                REQUIRE(made);
                (*made)->async([] {}).await();
            }
            auto made = EventLoop::create({.threads = 4, .scheduler = policy});
            REQUIRE(made);
            auto loop = std::move(*made);
            std::atomic<int> turns{0};
            auto player = [&] {
                for (int round = 0; round < 20; ++round) {
                    turns.fetch_add(1, std::memory_order_relaxed);
                    loop->yield();
                }
            };
            auto ping = loop->async(player);
            auto pong = loop->async(player);
            ping.await();
            pong.await();
            REQUIRE(turns.load() == 40);
        }
    }
}
