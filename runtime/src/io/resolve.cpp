// EventLoop::resolve: names to addresses, through getaddrinfo on the
// blocking pool.
//
// Why the pool: getaddrinfo may wait seconds for a name server, offers no
// readiness to wait for and no way to be interrupted (glibc's getaddrinfo_a
// brings threads and signals of its own). So a lookup is an abandonable
// PoolTask (blocking_pool.cpp has the protocol): the fiber waits for it as
// for any operation, and a cancel wakes the fiber at once while the task,
// which owns copies of its inputs and its outputs, finishes on its pool
// thread and is freed there. Text that needs no lookup (numeric addresses,
// "unix:" paths) never leaves the fiber.
//
// In the trace a lookup is one operation, kOpResolve, submitted by the
// fiber on its worker and completed on the "blocking pool N" thread. Its
// result is the number of addresses, or a negative errno standing for the
// failure: ENOENT for NameNotFound and ServiceNotFound, EAGAIN for
// TemporaryNameFailure, EIO for NameServerFailure, else the Error's errno.
#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>

#include "io/epoll/blocking_pool.hpp"
#include "support/errors.hpp"
#include "fiberscope/event_loop.hpp"
#include "io/syscall_io.hpp"

namespace fiberscope {

namespace detail {

// Test-only knobs, declared by tests/runtime/test_net_more.cpp and by no
// public header: a slow name server on demand. While held, every lookup
// waits on its pool thread before it calls getaddrinfo.
void holdResolvesForTesting(bool hold) noexcept;
// Lookups waiting in the hold right now.
unsigned resolvesHeldForTesting() noexcept;
// Lookup tasks not yet freed (queued, running, or abandoned and still running).
unsigned resolveTasksAliveForTesting() noexcept;

namespace {

struct TestHold {
    std::mutex mutex;
    std::condition_variable released;
    bool hold = false;
    unsigned held = 0;
};

// Never destroyed: a pool thread left running at exit may still look.
TestHold& testHold() {
    static TestHold* hold = new TestHold;
    return *hold;
}

// release/acquire: the count only; it publishes nothing else.
std::atomic<unsigned> g_tasks_alive{0};

struct ResolveTask final : PoolTask {
    ResolveTask() {
        opcode = kOpResolve;
        g_tasks_alive.fetch_add(1, std::memory_order_release);
    }
    ~ResolveTask() override { g_tasks_alive.fetch_sub(1, std::memory_order_release); }

    int run() noexcept override;

    // Inputs (copies: the caller's text may be gone before we run).
    char host[NI_MAXHOST] = {};
    char service[NI_MAXSERV] = {};
    addrinfo hints{};
    // Outputs.
    std::vector<Address> addresses;
    int eai = 0;
    int err = 0; // errno, for EAI_SYSTEM
};

int ResolveTask::run() noexcept {
    {
        TestHold& test = testHold();
        std::unique_lock lock(test.mutex);
        if (test.hold) {
            ++test.held;
            test.released.wait(lock, [&] { return !test.hold; });
            --test.held;
        }
    }
    addrinfo* list = nullptr;
    eai = ::getaddrinfo(host, service, &hints, &list);
    if (eai == EAI_SYSTEM) err = errno;
    if (eai == 0) {
        try {
            for (const addrinfo* entry = list; entry; entry = entry->ai_next) {
                if (!entry->ai_addr || entry->ai_addrlen > sizeof(sockaddr_storage)) continue;
                Address address = Address::fromNative(entry->ai_addr, entry->ai_addrlen);
                // /etc/hosts may name an address twice: once is enough.
                const bool seen = std::any_of(addresses.begin(), addresses.end(), [&](const Address& other) {
                    return other.size() == address.size() && std::memcmp(other.native(), address.native(), address.size()) == 0;
                });
                if (!seen) addresses.push_back(address);
            }
        } catch (const std::bad_alloc&) {
            addresses.clear();
            eai = EAI_MEMORY;
        }
        ::freeaddrinfo(list);
        if (eai == 0 && addresses.empty()) eai = EAI_NODATA;
    }
    if (eai == 0) return static_cast<int>(std::min<std::size_t>(addresses.size(), 0x7fffffff));
    const Error error = resolveError(eai, err);
    switch (error.code) {
    case Errc::NameNotFound: case Errc::ServiceNotFound: return -ENOENT;
    case Errc::TemporaryNameFailure: return -EAGAIN;
    case Errc::NameServerFailure: return -EIO;
    default: return error.sys_errno ? -error.sys_errno : -EINVAL;
    }
}

constexpr Error kBadSyntax{Errc::InvalidArgument, EINVAL};

// "HOST:PORT" or "[HOST6]:PORT", split.
struct Target {
    std::string_view host;
    std::string_view service;
    bool bracketed = false;
    bool numeric_port = false;
    std::uint16_t port = 0;
};

Result<Target> split(std::string_view text) {
    Target target;
    std::string_view rest;
    if (text.starts_with('[')) {
        const auto close = text.find(']');
        if (close == std::string_view::npos) return kBadSyntax;
        target.host = text.substr(1, close - 1);
        target.bracketed = true;
        rest = text.substr(close + 1);
        if (!rest.starts_with(':')) return kBadSyntax;
        target.service = rest.substr(1);
    } else {
        const auto colon = text.rfind(':');
        if (colon == std::string_view::npos) return kBadSyntax;
        target.host = text.substr(0, colon);
        target.service = text.substr(colon + 1);
        // An IPv6 address needs its brackets: "::1:80" has no clear port.
        if (target.host.find(':') != std::string_view::npos) return kBadSyntax;
    }
    if (target.host.empty() || target.service.empty()) return kBadSyntax;
    if (target.host.size() >= NI_MAXHOST || target.service.size() >= NI_MAXSERV) return kBadSyntax;
    if (target.host.find('\0') != std::string_view::npos || target.service.find('\0') != std::string_view::npos)
        return kBadSyntax;
    if (std::all_of(target.service.begin(), target.service.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        unsigned port = 0;
        auto [end, ec] = std::from_chars(target.service.data(), target.service.data() + target.service.size(), port);
        if (ec != std::errc{} || end != target.service.data() + target.service.size() || port > 65535) return kBadSyntax;
        target.numeric_port = true;
        target.port = static_cast<std::uint16_t>(port);
    } else {
        // A service name has a letter and no hyphen at either end (RFC
        // 6335): "-1" is a bad port, not an unknown service.
        const bool letter = std::any_of(target.service.begin(), target.service.end(),
                                        [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); });
        if (!letter || target.service.front() == '-' || target.service.back() == '-') return kBadSyntax;
    }
    if (target.bracketed) {
        // The part before a scope ("%eth0") must be an IPv6 address.
        const std::string_view address = target.host.substr(0, target.host.find('%'));
        if (!Address::ipv6(address, 0)) return kBadSyntax;
    }
    return target;
}

Result<std::vector<Address>> single(const Address& address) {
    try {
        return std::vector<Address>{address};
    } catch (const std::bad_alloc&) {
        return Error{Errc::OutOfMemory, ENOMEM};
    }
}

} // namespace

void holdResolvesForTesting(bool hold) noexcept {
    TestHold& test = testHold();
    {
        std::lock_guard lock(test.mutex);
        test.hold = hold;
    }
    test.released.notify_all();
}

unsigned resolvesHeldForTesting() noexcept {
    TestHold& test = testHold();
    std::lock_guard lock(test.mutex);
    return test.held;
}

unsigned resolveTasksAliveForTesting() noexcept { return g_tasks_alive.load(std::memory_order_acquire); }

} // namespace detail

using namespace detail;

Result<std::vector<Address>> EventLoop::resolve(std::string_view text, ResolveOptions options) {
    const int family = options.family;
    if (family != AF_UNSPEC && family != AF_INET && family != AF_INET6 && family != AF_UNIX)
        return Error{Errc::AddressFamilyNotSupported, EAFNOSUPPORT};
    if (text.starts_with("unix:")) {
        if (family != AF_UNSPEC && family != AF_UNIX) return Error{Errc::AddressFamilyNotSupported, EAFNOSUPPORT};
        auto address = Address::local(text.substr(5));
        if (!address) return address.error();
        return single(*address);
    }
    if (family == AF_UNIX) return Error{Errc::AddressFamilyNotSupported, EAFNOSUPPORT};
    auto target = split(text);
    if (!target) return target.error();

    // An IPv6 address has no IPv4 form (getaddrinfo would call it no name).
    if (target->bracketed && family == AF_INET) return Error{Errc::NameNotFound, 0};
    // Numeric addresses of the family asked for: nothing to look up.
    if (target->numeric_port) {
        if (target->bracketed && (family == AF_UNSPEC || family == AF_INET6))
            if (auto address = Address::ipv6(target->host, target->port)) return single(*address);
        if (!target->bracketed && (family == AF_UNSPEC || family == AF_INET))
            if (auto address = Address::ipv4(target->host, target->port)) return single(*address);
    }

    auto* task = new (std::nothrow) ResolveTask;
    if (!task) return Error{Errc::OutOfMemory, ENOMEM};
    std::memcpy(task->host, target->host.data(), target->host.size());
    std::memcpy(task->service, target->service.data(), target->service.size());
    task->hints.ai_family = family;
    task->hints.ai_socktype = options.type == SocketType::stream ? SOCK_STREAM : SOCK_DGRAM;
    // Brackets hold an address, never a name; a numeric port needs no
    // /etc/services.
    task->hints.ai_flags = (target->bracketed ? AI_NUMERICHOST : 0) | (target->numeric_port ? AI_NUMERICSERV : 0);
    const bool bracketed = target->bracketed;
    auto done = runPoolTask(task);
    if (!done) return done.error();
    std::unique_ptr<ResolveTask> mine(static_cast<ResolveTask*>(*done));
    if (mine->eai != 0) {
        Error error = resolveError(mine->eai, mine->err);
        // Under AI_NUMERICHOST, "no such name" means "not an address".
        if (bracketed && error.code == Errc::NameNotFound && mine->eai == EAI_NONAME) return kBadSyntax;
        return error;
    }
    return std::move(mine->addresses);
}

} // namespace fiberscope
