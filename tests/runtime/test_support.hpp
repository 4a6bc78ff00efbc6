// Helpers shared by the runtime tests.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <string>

#include <fiberscope/fiberscope.hpp>

// Readable failure messages for errors ("TimedOut (errno 62)").
namespace Catch {
template <>
struct StringMaker<fiberscope::Error> {
    static std::string convert(const fiberscope::Error& e) {
        return std::string(e.name()) + " (errno " + std::to_string(e.sys_errno) + ")";
    }
};
template <>
struct StringMaker<fiberscope::Errc> {
    static std::string convert(fiberscope::Errc code) { return fiberscope::errcName(code); }
};
} // namespace Catch

namespace test {

// Scales iteration counts down under sanitizers (FIBERSCOPE_TEST_SCALE=N divides).
inline long scaled(long n) {
    static const long divisor = [] {
        const char* s = std::getenv("FIBERSCOPE_TEST_SCALE");
        long d = s ? std::atol(s) : 1;
        return d > 0 ? d : 1;
    }();
    long r = n / divisor;
    return r > 0 ? r : 1;
}

inline std::unique_ptr<fiberscope::EventLoop> makeLoop(unsigned threads) {
    auto loop = fiberscope::EventLoop::create({.threads = threads});
    if (!loop) FAIL("EventLoop::create failed: " << loop.error().message());
    return std::move(loop).value();
}

inline double secondsSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace test
