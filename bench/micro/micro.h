// Shared by the rdmx-micro sources. Every benchmark checks the result of the
// operation it times, so a broken matcher, codec or pool fails the run (and
// the micro.smoke test) instead of producing a fast number.
#pragma once
#include <benchmark/benchmark.h>

namespace rdmx::micro {

// Marks the running benchmark as failed ("ERROR OCCURRED" in the report) and
// makes rdmx-micro exit with status 1 once every selected benchmark has run.
// The caller leaves its timing loop right after.
void fail(benchmark::State &state, const char *what);

}  // namespace rdmx::micro
