#include "support/affinity.hpp"

#include <pthread.h>

namespace fiberscope::detail {

std::vector<int> allowedCpus() noexcept {
    std::vector<int> cpus;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) != 0) return cpus;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
        if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    return cpus;
}

bool pinCallingThread(int cpu) noexcept {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

void SavedAffinity::save() noexcept {
    CPU_ZERO(&set);
    saved = pthread_getaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

void SavedAffinity::restore() const noexcept {
    if (saved) pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

} // namespace fiberscope::detail
