// The `self` transport: a rank's messages to itself. Sends are copied into a
// queue of its own buffers and delivered, in order, by the next progress
// (which the engine runs right after each send to itself); get and put are
// one memcpy between two of our own buffers, checked against what was
// exposed. No device, no shared memory: a job of one runs on this alone.
#pragma once
#include <memory>

#include "transport/transport.h"

namespace rdmx {

std::unique_ptr<Transport> self_open(int rank, size_t eager_limit, TransportSink *sink);

}  // namespace rdmx
