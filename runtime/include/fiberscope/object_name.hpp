// Names for the program's objects in its trace: setObjectName(gate, "gate")
// and the viewer, the text tools and the explanations call the object
// "gate" instead of its address (an object-name record, FORMAT.md; nothing
// happens when the program is not recording). A primitive built on others
// (Queue, Semaphore, RwLock, Event: their headers overload it) names its
// parts too, "NAME.mutex" and its conditions ("table.readers",
// "table.writers"), since their records are what makes fibers wait.
// A name holds from the call until the object is named again (its address
// may later be another object's).
#pragma once

#include <initializer_list>
#include <string_view>
#include <type_traits>
#include <utility>

namespace fiberscope {

// The object at this address (a Mutex, Condition, Group, or any object whose
// address a trace record names).
void setObjectName(const void* object, std::string_view name) noexcept;

// Any other object, by reference (not a pointer: pass &x for that).
template <class T>
    requires(!std::is_pointer_v<T>)
void setObjectName(const T& object, std::string_view name) noexcept {
    setObjectName(static_cast<const void*>(&object), name);
}

namespace detail {
// Names each part "NAME.suffix" (when recording).
void nameParts(std::string_view name, std::initializer_list<std::pair<const void*, const char*>> parts) noexcept;
} // namespace detail

} // namespace fiberscope
