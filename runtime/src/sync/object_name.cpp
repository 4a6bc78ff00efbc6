// setObjectName (fiberscope/object_name.hpp): an object-name record, and,
// for a primitive built on others, one per part.
#include "fiberscope/object_name.hpp"

#include <string>

#include "fiberscope/event.hpp"
#include "fiberscope/rwlock.hpp"
#include "fiberscope/semaphore.hpp"
#include "support/tracing.hpp"

namespace fiberscope {

void setObjectName(const void* object, std::string_view name) noexcept {
    // Written now, on the naming thread: before any record of the object
    // made after the call (the tools name it from this record's time on).
    FIBERSCOPE_TRACE_EVENT(emit::objectName(now, object, name));
}

// A primitive's parts are named before it: its first member (its mutex)
// has its address, and the later name, the primitive's, is the one the
// tools show for that address.

namespace detail {

// "NAME.part" for a part of a named primitive (nothing when not recording:
// the string is built only then).
void nameParts(std::string_view name, std::initializer_list<std::pair<const void*, const char*>> parts) noexcept {
    if (!trace::enabled()) return;
    try {
        for (const auto& [part, suffix] : parts) setObjectName(part, std::string(name) + "." + suffix);
    } catch (...) {
        // Out of memory for a name: the parts keep their addresses.
    }
}

} // namespace detail

void setObjectName(const RwLock& lock, std::string_view name) noexcept {
    detail::nameParts(name, {{&lock.mutex_, "mutex"}, {&lock.readers_cv_, "readers"}, {&lock.writers_cv_, "writers"}});
    setObjectName(static_cast<const void*>(&lock), name);
}

void setObjectName(const Semaphore& semaphore, std::string_view name) noexcept {
    detail::nameParts(name, {{&semaphore.mutex_, "mutex"}, {&semaphore.available_, "waiters"}});
    setObjectName(static_cast<const void*>(&semaphore), name);
}

void setObjectName(const Event& event, std::string_view name) noexcept {
    detail::nameParts(name, {{&event.mutex_, "mutex"}, {&event.condition_, "waiters"}});
    setObjectName(static_cast<const void*>(&event), name);
}

} // namespace fiberscope
