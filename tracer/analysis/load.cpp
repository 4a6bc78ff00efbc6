// Reading a trace and building its model beside the read (load.hpp).
//
// The read runs on a thread of its own and the build on the caller's: the
// model's many small blocks then come from the caller's malloc arena, as
// with buildTimeline, rather than from a second arena that would keep its
// own free pages resident beside the first (~40 MB more while viewing the
// benchmark's 10M-record trace).
#include "fiberscope/analysis/load.hpp"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <condition_variable>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>

namespace fiberscope::analysis {

namespace {

// Hands the reader's streams to the build and holds the reader's merge open
// (merged() waits) until the build has read them.
class StreamHandoff final : public trace::MergeObserver {
public:
    void merging(const trace::Trace&, const std::vector<std::vector<trace::Event>>& per_thread) override {
        std::lock_guard lock(mutex_);
        streams_ = &per_thread;
        changed_.notify_all();
    }
    void merged() noexcept override {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return build_done_; });
    }
    // The reader has returned (or thrown): no streams will come.
    void readDone() {
        std::lock_guard lock(mutex_);
        read_done_ = true;
        changed_.notify_all();
    }
    // Waits for the streams (nullptr: the read ended without them).
    const std::vector<std::vector<trace::Event>>* waitForStreams() {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return streams_ || read_done_; });
        return streams_;
    }
    void buildDone() {
        std::lock_guard lock(mutex_);
        build_done_ = true;
        changed_.notify_all();
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    const std::vector<std::vector<trace::Event>>* streams_ = nullptr;
    bool read_done_ = false;
    bool build_done_ = false;
};

void trimHeap() {
#ifdef __GLIBC__
    malloc_trim(0); // as buildTimeline does: the build's freed scratch goes back (issue 13: resident memory)
#endif
}

} // namespace

bool readTraceAndModel(const std::string& path, trace::Trace& trace, Timeline& model, trace::ReadError& error,
                       trace::ReadOptions options) {
    StreamHandoff handoff;
    options.observer = &handoff;
    bool read = false;
    std::exception_ptr read_failure;
    std::thread reader;
    try {
        reader = std::thread([&] {
            try {
                read = trace::readTrace(path, trace, error, options);
            } catch (...) {
                read_failure = std::current_exception();
            }
            handoff.readDone();
        });
    } catch (const std::system_error&) {
        // No second thread: read, then build.
        options.observer = nullptr;
        if (!trace::readTrace(path, trace, error, options)) return false;
        model = buildTimeline(trace);
        return true;
    }
    TimelineBuilder builder;
    bool appended = false;
    std::exception_ptr build_failure;
    if (const auto* streams = handoff.waitForStreams()) {
        try {
            // `trace`'s threads are final once the streams are handed over;
            // the reader writes only its events until it returns.
            appended = builder.appendStreams(trace, *streams);
        } catch (...) {
            build_failure = std::current_exception();
        }
    }
    handoff.buildDone();
    reader.join(); // (orders the reader's writes to `trace`, `read` and `error` before what follows)
    if (read_failure) std::rethrow_exception(read_failure);
    if (!read) return false;
    if (build_failure) std::rethrow_exception(build_failure);
    if (!appended) {
        builder = TimelineBuilder();
        builder.append(trace);
    }
    model = std::move(builder).finish(trace);
    trimHeap();
    return true;
}

} // namespace fiberscope::analysis
