// The fibers of a queue that schedule() is about to publish, as its trace
// records name them: one schedule record per fiber (count 1, FORMAT.md
// "schedule"), all at the publication's time. Their ids are read while the
// queue is still ours: once published, another thread may run the fibers
// and relink (or recycle) them before the records are written.
//
// Why one record per fiber rather than one with a count: a count names the
// fibers only by an order (the head, then the fibers made ready after it
// on this thread), and a batch's order is not always the order of the
// records that made its fibers ready (a blocking-pool completion is
// recorded on the pool's thread, earlier, and gathered after the
// readiness events): the validator and the model then read the wrong
// fibers into the batch.
#pragma once

#include <cstdint>
#include <vector>

#include "fiber/fiber.hpp"
#include "support/tracing.hpp"

namespace fiberscope::detail {

class TracedFibers {
public:
    // Reads the queue's ids (the caller is tracing).
    void read(FiberQueue queue) {
        for (Fiber* f = queue.head;; f = f->queue_next) {
            if (count_ < kInline) inline_[count_] = f->id;
            else more_.push_back(f->id);
            ++count_;
            if (f == queue.tail) break;
        }
    }
    // Their schedule records, at `time` (see FIBERSCOPE_TRACE_EVENT_AT),
    // the queue's last fiber first: read one by one as pushes onto a stack
    // (the seed's queue word), they leave it as the one CAS that pushed the
    // whole list did, its head on top.
    void write(std::uint64_t time, std::uint64_t target, trace::ScheduleHow how) const {
        FIBERSCOPE_TRACE_EVENT_AT(time, for (std::size_t k = count_; k-- > 0;)
                                            emit::schedule(now, k < kInline ? inline_[k] : more_[k - kInline], 1, target, how));
    }

private:
    static constexpr std::size_t kInline = 16;
    std::uint64_t inline_[kInline];
    std::size_t count_ = 0;
    std::vector<std::uint64_t> more_; // past kInline (a broadcast to many waiters)
};

} // namespace fiberscope::detail
