// Binds the calling (progress) thread per core/placement.h and logs where.
#pragma once
#include "protocols/context.h"

namespace rdmx {
void apply_progress_placement(Ctx *c);
// The cpuset (as a list string) and reason, for rdmx-info.
std::string describe_progress_placement(const char *ibdev);
}  // namespace rdmx
