// Test-only hooks into a running context's engine. Compiled into every build
// and inert unless called; tests reach them through rdmx_internal.
#pragma once
#include <string>

#include "rdmx/rdmx.h"

namespace rdmx {

// Sets aside every send-queue completion for `peer` (READ, WRITE, SEND,
// flush) instead of dispatching it, as a device slow to complete or flush
// that QP would; release_send_completions dispatches them, in order.
// RDMX_ERR_INVALID_ARG for a bad peer, ourselves, a job of one, or while
// completions are already held.
rdmx_status_t hold_send_completions(rdmx_context_h ctx, int peer);
void release_send_completions(rdmx_context_h ctx);

// Checks the engine's bookkeeping against itself: no send ring holds more
// WRs than it has slots; every bounce buffer is free or held by exactly one
// live ring slot (none leaked, none shared); on each usable connection the
// READ/WRITE count equals the READ/WRITE slots in its ring. RDMX_OK, or
// RDMX_ERR_INTERNAL with *why saying which and where.
rdmx_status_t check_engine(rdmx_context_h ctx, std::string *why);

// How many of the progress thread's delegated sleeps (while the application
// drives progress) have ended by their timeout since rdmx_init: how often
// the thread woke beside a busy application. 0 without a progress thread.
uint64_t delegated_timeouts(rdmx_context_h ctx);

// The spin budget a wait starts from (RDMX_SPIN_US as resolved at bring-up:
// auto depends on how crowded the host is), in microseconds; 0 for NULL.
unsigned spin_floor_us(rdmx_context_h ctx);
// How many waits have outlasted their spin and slept since rdmx_init.
uint64_t wait_sleeps(rdmx_context_h ctx);

}  // namespace rdmx
