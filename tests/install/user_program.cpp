// A user's own program, built against an installed Fiberscope.
#include <cstdio>

#include <fiberscope/fiberscope.hpp>

int main() {
    auto loop = fiberscope::EventLoop::create().value();
    const int answer = loop->async([] { return 6 * 7; }).await();
    std::printf("%d\n", answer);
    return answer == 42 ? 0 : 1;
}
