// The small-message path folded into the public entry points.
//
// A blocking 8-byte send, receive or wait crosses the API, the engine, the
// tag matcher and a transport: twenty-odd functions in four objects, and
// each call paid its prologue, epilogue and argument moves (about 150 of
// 1,200 instructions per ping-pong round trip, counted by callgrind). UCX
// avoids that with UCS_F_ALWAYS_INLINE down its whole fast path; here the
// hot public entry points are flattened (RDMX_HOT_ENTRY): the compiler
// inlines their whole call tree, across the layers when the library is
// linked with LTO (cmake/RdmxLibrary.cmake), and the call tree stops at
// functions marked RDMX_SLOW_PATH: what the small-message path does not
// reach (rendezvous, queued sends, sleeping, pipelined copies, failure
// handling, logging). Those stay calls, so the flattened functions stay
// small and only one copy of the slow code exists. Virtual calls (another
// transport, the transport's upcalls) stay calls too: the library is built
// without speculative devirtualization, which under flatten copied every
// transport's code into every entry point.
//
// Marking: RDMX_SLOW_PATH on the declaration, where every caller sees it.
// A function called on every small message must not carry it.
//
// RDMX_HOT_INLINE is for a hot helper that also has callers flatten does
// not reach: the engine-level calls the communicator layer makes (do_isend),
// the progress thread's loop, the wait functions' own passes. It is forced
// into every caller (as UCS_F_ALWAYS_INLINE), so those paths lose no call
// either; under a flattened entry it changes nothing.
#pragma once

#define RDMX_HOT_ENTRY [[gnu::flatten]]
#define RDMX_HOT_INLINE [[gnu::always_inline]] inline
#define RDMX_SLOW_PATH [[gnu::noinline]]
// A hot function flatten must not fold in, for its size: one transport's
// per-message code that other transports' messages pass by (transport/rc.h
// says what folding it in cost). Still a direct call, never a table's.
#define RDMX_HOT_CALL [[gnu::noinline]]
