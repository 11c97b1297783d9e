#include "core/clock.h"
#include "rdmx/rdmx.h"

extern "C" double rdmx_wtime(void) { return static_cast<double>(rdmx::now_ns()) * 1e-9; }
