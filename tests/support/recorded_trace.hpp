// A trace a test just recorded: read strictly (a warning is an error), the
// file removed, and the read required to succeed, naming what was wrong.
#pragma once

#include <catch2/catch.hpp>

#include <unistd.h>

#include <string>

#include "../../tracer/include/fiberscope/trace_reader.hpp"

namespace test {

inline fiberscope::trace::Trace readRecordedTrace(const std::string& path) {
    fiberscope::trace::Trace trace;
    fiberscope::trace::ReadError error;
    const bool read = fiberscope::trace::readTrace(path, trace, error, {.strict = true});
    unlink(path.c_str());
    INFO(error.text());
    REQUIRE(read);
    return trace;
}

} // namespace test
