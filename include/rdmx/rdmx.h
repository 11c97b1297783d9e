/*
 * rdmx: kernel-bypass tagged message passing over RDMA (rdma-core).
 *
 * This header is the whole public C API. It is plain C99 and usable from C,
 * C++ and (through ISO_C_BINDING, see the `rdmx` Fortran module) Fortran.
 *
 * General contract, unless a function says otherwise:
 *  - Every function returns an rdmx_status_t; RDMX_OK (0) is success, negative
 *    values are errors. rdmx_strerror() names them.
 *  - Bad arguments return RDMX_ERR_INVALID_ARG and log one line naming the
 *    argument; they never crash and never change state.
 *  - Thread safety: any thread may call any function on the same context
 *    concurrently (the level of MPI_THREAD_MULTIPLE), except rdmx_init and
 *    rdmx_finalize, which must not race with other calls on that context
 *    (threads blocked in a wait, test or probe are the exception: finalize
 *    wakes them, see rdmx_finalize).
 *  - Sizes are in bytes, ranks are 0..size-1, user tags are 0..INT32_MAX.
 *  - No C++ exception ever crosses this API.
 *  - No wait hangs on a lost peer: a peer's exit, disconnect or QP failure
 *    completes every operation naming it with RDMX_ERR_PEER_LOST; bring-up
 *    and finalize have deadlines (RDMX_CONNECT_TIMEOUT, RDMX_PEER_TIMEOUT).
 */
#ifndef RDMX_RDMX_H
#define RDMX_RDMX_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define RDMX_API __attribute__((visibility("default")))
#else
#define RDMX_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** Library version: major.minor.patch. */
#define RDMX_VERSION_MAJOR 0
#define RDMX_VERSION_MINOR 1
#define RDMX_VERSION_PATCH 0

/** A context: one job's connections, buffers and progress. Created by
 *  rdmx_init, destroyed by rdmx_finalize; safe to share between threads. */
typedef struct rdmx_context *rdmx_context_h;
/** A nonblocking operation. Owned by the caller until rdmx_test/rdmx_wait
 *  (or waitall/waitany) report it complete, which frees it and sets the
 *  handle to NULL. One thread at a time may test/wait a given request. */
typedef struct rdmx_request *rdmx_request_h;   /* NULL once completed and freed */

/** Status codes. RDMX_OK is 0, RDMX_INPROGRESS (from rdmx_test only) is
 *  positive, errors are negative: INVALID_ARG a bad argument (nothing
 *  changed); TRUNCATE a message longer than the receive buffer; PEER_LOST
 *  the peer exited, disconnected or its QP failed; TIMEOUT a deadline
 *  passed (bring-up); CONNECT bring-up refused; DEVICE the RDMA device
 *  failed; NO_DEVICE no usable port; NO_MEMORY allocation or registration
 *  (see `ulimit -l`); CANCELED by rdmx_cancel or finalize; PROTOCOL a peer
 *  sent malformed data and was disconnected; UNSUPPORTED not available. */

typedef enum { RDMX_OK = 0, RDMX_INPROGRESS = 1, RDMX_ERR_INVALID_ARG = -1, RDMX_ERR_TRUNCATE = -2,
               RDMX_ERR_PEER_LOST = -3, RDMX_ERR_TIMEOUT = -4, RDMX_ERR_CONNECT = -5,
               RDMX_ERR_DEVICE = -6, RDMX_ERR_NO_DEVICE = -7, RDMX_ERR_NO_MEMORY = -8,
               RDMX_ERR_CANCELED = -9, RDMX_ERR_INTERNAL = -10, RDMX_ERR_PROTOCOL = -11,
               RDMX_ERR_UNSUPPORTED = -12 } rdmx_status_t;

/** Wildcards for receives and probes: any sender, any tag (of the tag space). */
#define RDMX_ANY_SOURCE (-1)
#define RDMX_ANY_TAG    (-1)
/** "No peer" for send, receive and sendrecv (the edge of a halo exchange):
 *  the operation completes at once and moves nothing; a receive reports
 *  source RDMX_PROC_NULL, tag RDMX_ANY_TAG, length 0. */
#define RDMX_PROC_NULL  (-2)
/** rdmx_comm_split colour of a rank that joins no new communicator. */
#define RDMX_UNDEFINED  (-3)

/** What a completed receive (or probe) saw. `length` is the size the sender
 *  sent, even when it was truncated; `error` is the operation's own status. */
typedef struct { int source; int tag; size_t length; rdmx_status_t error; } rdmx_msg_info_t;

/**
 * Allgather callback for applications that already have a runtime (e.g. MPI):
 * every rank contributes `len` bytes from `sendbuf`; on return `recvbuf` holds
 * size*len bytes, rank i's contribution at offset i*len. Must be collective
 * over the same processes and return 0 on success, nonzero on failure.
 */
typedef int (*rdmx_allgather_fn_t)(const void *sendbuf, void *recvbuf, size_t len, void *arg);

/** Progress modes (RDMX_PROGRESS=thread|caller). */
typedef enum { RDMX_PROGRESS_DEFAULT = 0, RDMX_PROGRESS_THREAD = 1, RDMX_PROGRESS_CALLER = 2 } rdmx_progress_mode_t;

/** Thread levels (RDMX_THREADS=multiple|single), as MPI_THREAD_MULTIPLE and
 *  MPI_THREAD_FUNNELED/SERIALIZED. `multiple` (default): any thread may call
 *  any function at any time; each call takes the engine lock at most once.
 *  `single`: the application promises that calls on a context and on its
 *  requests never overlap (one thread, or threads that serialise their own
 *  calls); the send and receive paths then take no lock and no atomic
 *  read-modify-write. With RDMX_PROGRESS=thread the progress thread is a
 *  second thread inside the library, so the engine keeps its lock (taken
 *  uncontended: the progress thread steps aside while the application
 *  calls in); everything else `single` drops is dropped in both modes. */
typedef enum { RDMX_THREADS_DEFAULT = 0, RDMX_THREADS_MULTIPLE = 1, RDMX_THREADS_SINGLE = 2 } rdmx_thread_level_t;

/** Argument checks (RDMX_CHECK_ARGS=all|handles). `all` (default): every
 *  argument of every call is checked, and a bad one is logged and returns
 *  RDMX_ERR_INVALID_ARG. `handles`: the point-to-point calls (send, recv,
 *  their nonblocking and synchronous forms) still check the context handle,
 *  but trust their buffer, length, rank and tag: for a layer above rdmx that
 *  has checked those already (the MPI layer asks for it, so that each
 *  argument is checked once). A bad argument is then undefined behaviour. */
typedef enum { RDMX_CHECK_DEFAULT = 0, RDMX_CHECK_ALL = 1, RDMX_CHECK_HANDLES = 2 } rdmx_check_level_t;

/** When rc connections are made (RDMX_CONNECT=mesh|lazy|auto). `mesh`:
 *  every pair inside rdmx_init. `lazy`: on first use of a peer (a send to
 *  it, a receive naming it); a process pays for the peers it talks to.
 *  `auto` (default): mesh up to 16 ranks, lazy above. Every rank of a job must
 *  resolve to the same mode: rdmx_init fails (INVALID_ARG) naming the peer
 *  that disagrees. */
typedef enum { RDMX_CONNECT_DEFAULT = 0, RDMX_CONNECT_MESH = 1, RDMX_CONNECT_LAZY = 2, RDMX_CONNECT_AUTO = 3 } rdmx_connect_mode_t;

/**
 * Configuration. Always initialise with rdmx_config_init() first, then set
 * the fields you want: a zero / NULL field means "environment, else default".
 * A field set here wins over the RDMX_* environment variable of the same name
 * (see docs/configuration.md for the table). The struct may grow at the end;
 * `struct_size` lets the library tell old callers from new ones.
 */
struct rdmx_config {
    size_t struct_size;              /* set by rdmx_config_init */
    /* Bootstrap through a caller's runtime instead of PMIx. All three or none. */
    rdmx_allgather_fn_t allgather;   /* NULL: PMIx, or a singleton job when not launched */
    void *allgather_arg;
    int rank;                        /* this process's rank when allgather is set */
    int size;                        /* job size when allgather is set */
    const char *device;              /* RDMX_DEVICE: "rxe0" or "rxe0:1" */
    const char *ifaddr;              /* RDMX_IFADDR: IPv4 address (or interface name) to use */
    size_t eager_limit;              /* RDMX_EAGER_LIMIT: largest eager payload, bytes */
    size_t rndv_thresh;              /* RDMX_RNDV_THRESH: smallest rendezvous message, bytes */
    unsigned srq_depth;              /* RDMX_SRQ_DEPTH: receive buffers posted to the SRQ */
    size_t unexpected_limit;         /* RDMX_UNEXPECTED_LIMIT: bytes of unexpected data buffered */
    rdmx_progress_mode_t progress;   /* RDMX_PROGRESS */
    int log_level;                   /* RDMX_LOG_LEVEL: 0 error,1 warn,2 info,3 debug,4 trace; -1 = unset */
    double connect_timeout;          /* RDMX_CONNECT_TIMEOUT: seconds for the full mesh */
    double peer_timeout;             /* RDMX_PEER_TIMEOUT: seconds finalize waits for peers */
    rdmx_thread_level_t threads;     /* RDMX_THREADS */
    rdmx_check_level_t check_args;   /* RDMX_CHECK_ARGS */
    /* Added after the first version, which ended at check_args: read when
     * struct_size covers them, so a caller built against the older header
     * gets their defaults. */
    rdmx_connect_mode_t connect;     /* RDMX_CONNECT */
    unsigned lazy_peers;             /* RDMX_LAZY_PEERS: peers on-demand queues are planned for; 0 = unset */
};
typedef struct rdmx_config rdmx_config_t;    /* NULL means defaults plus RDMX_* environment */

/** Fill *cfg with "unset" values (all zero, log_level -1, struct_size set). */
RDMX_API void rdmx_config_init(rdmx_config_t *cfg);

/**
 * Create a context: bootstrap (PMIx, the allgather callback, or a singleton),
 * open the device, connect RC queue pairs (a full mesh here, or each on its
 * first use: rdmx_connect_mode_t), start progress.
 * Collective over all ranks of the job. On error *ctx_p is NULL and the log
 * names the peer, the address and the CM event that failed. `cfg` (and its
 * strings) is read during the call only; the allgather callback is called
 * only inside rdmx_init. A job of one process needs no RDMA device. Several
 * contexts may exist one after another or side by side. A `cfg` from a
 * caller built against an earlier version of this header (a smaller
 * struct_size, down to the first version's) is accepted; the fields it does
 * not have take their defaults.
 * Example:
 *     rdmx_context_h ctx;
 *     if (rdmx_init(NULL, &ctx) != RDMX_OK) return 1;
 *     ... rdmx_finalize(ctx);
 * Errors: INVALID_ARG, NO_DEVICE, DEVICE, CONNECT, TIMEOUT, NO_MEMORY, INTERNAL.
 */
RDMX_API rdmx_status_t rdmx_init(const rdmx_config_t *cfg, rdmx_context_h *ctx_p);

/**
 * Complete outstanding sends (bounded by RDMX_PEER_TIMEOUT), disconnect every
 * peer (with a deadline), release every verbs resource and free the context.
 * Complete and free every request first (as with MPI_Finalize): requests
 * still pending (posted receives, sends a peer never took) are completed with
 * RDMX_ERR_CANCELED so no thread waits forever; threads blocked in a wait or
 * probe on the context return (CANCELED) before it is freed; a warning
 * counts the handles never freed. Afterwards every call on the context or on
 * one of its requests returns RDMX_ERR_INVALID_ARG. Every rank should call it.
 */
RDMX_API rdmx_status_t rdmx_finalize(rdmx_context_h ctx);

/** This process's rank, or -1 for an invalid context. */
RDMX_API int rdmx_rank(rdmx_context_h ctx);
/** Number of processes in the job, or -1 for an invalid context. */
RDMX_API int rdmx_size(rdmx_context_h ctx);

/**
 * Blocking send of `len` bytes to rank `dest` with tag `tag` (>= 0). Returns
 * when `buf` may be reused: at once for messages below RDMX_RNDV_THRESH
 * (eager), after the receiver has pulled the data for larger ones
 * (rendezvous), so a large blocking send waits for its matching receive.
 * Messages from one sender to one receiver that match the same receive are
 * received in the order sent (non-overtaking). `buf` may be NULL when len is 0. Sending to oneself works (a matching receive must
 * be posted from another thread or beforehand with rdmx_irecv).
 * Errors: INVALID_ARG, PEER_LOST, TIMEOUT, DEVICE, NO_MEMORY.
 */
RDMX_API rdmx_status_t rdmx_send(rdmx_context_h ctx, const void *buf, size_t len, int dest, int tag);
/**
 * Blocking receive into `buf` (capacity `len` bytes) of a message from
 * `source` (or RDMX_ANY_SOURCE) with `tag` (or RDMX_ANY_TAG). A longer
 * message fills `len` bytes, returns RDMX_ERR_TRUNCATE and reports its full
 * size in info_p->length; not a byte is written past buf+len.
 */
RDMX_API rdmx_status_t rdmx_recv(rdmx_context_h ctx, void *buf, size_t len, int source, int tag, rdmx_msg_info_t *info_p);
/** Nonblocking send: *req_p receives a request to complete with test/wait. The
 *  buffer must not change until then. A send that completed as it was posted
 *  (an eager message the transport copied or inlined: nothing was queued
 *  for `dest` and its lane had room) allocates no request and sets *req_p
 *  to NULL, a finished handle (test/wait/waitall take it as done with
 *  RDMX_OK, as MPI takes MPI_REQUEST_NULL). On an error return *req_p is NULL.
 *  Errors: INVALID_ARG, PEER_LOST, DEVICE, NO_MEMORY (the request's own
 *  status may also be PEER_LOST or PROTOCOL when the peer fails later). */
RDMX_API rdmx_status_t rdmx_isend(rdmx_context_h ctx, const void *buf, size_t len, int dest, int tag, rdmx_request_h *req_p);
/** Synchronous nonblocking send (MPI_Issend): as rdmx_isend, but the
 *  request completes only once a matching receive has taken the message
 *  (the rendezvous protocol whatever the size, so the receiver's match is
 *  what releases the sender); never completed at post, so *req_p is NULL
 *  on success only for RDMX_PROC_NULL. Errors: as rdmx_isend. */
RDMX_API rdmx_status_t rdmx_issend(rdmx_context_h ctx, const void *buf, size_t len, int dest, int tag, rdmx_request_h *req_p);
/** Nonblocking receive; see rdmx_recv for matching and truncation. On an
 *  error return *req_p is NULL. Errors: INVALID_ARG, PEER_LOST (source has
 *  failed), DEVICE; completion may report TRUNCATE, PEER_LOST, CANCELED. */
RDMX_API rdmx_status_t rdmx_irecv(rdmx_context_h ctx, void *buf, size_t len, int source, int tag, rdmx_request_h *req_p);
/**
 * Check a request. If it completed: *done_p = 1, *info_p filled (may be NULL),
 * the request is freed, *req becomes NULL and the operation's own status is
 * returned. Otherwise *done_p = 0 and RDMX_INPROGRESS is returned. A NULL
 * *req counts as completed with RDMX_OK (like MPI_REQUEST_NULL).
 */
RDMX_API rdmx_status_t rdmx_test(rdmx_request_h *req, int *done_p, rdmx_msg_info_t *info_p);
/** Wait for a request (spinning briefly, then blocking), free it, set *req to
 *  NULL and return its status. */
RDMX_API rdmx_status_t rdmx_wait(rdmx_request_h *req, rdmx_msg_info_t *info_p);
/** Wait for all n requests; infos may be NULL; NULL entries count as done.
 *  Returns RDMX_OK or the first error in array order; every request is
 *  freed and every entry set to NULL either way; infos are filled for
 *  failed requests too. */
RDMX_API rdmx_status_t rdmx_waitall(size_t n, rdmx_request_h reqs[], rdmx_msg_info_t infos[] /* may be NULL */);
/** Wait for any one non-NULL request; its index goes to *index_p. If all are
 *  NULL, returns RDMX_OK with *index_p = n. */
RDMX_API rdmx_status_t rdmx_waitany(size_t n, rdmx_request_h reqs[], size_t *index_p, rdmx_msg_info_t *info_p);
/** Cancel a receive that has not matched yet: it then completes with
 *  RDMX_ERR_CANCELED. A matched receive or a send is not cancelled (RDMX_OK is
 *  returned and the request completes normally); nor is a NULL handle, a
 *  request already finished (a send that completed at post). */
RDMX_API rdmx_status_t rdmx_cancel(rdmx_request_h req);                 /* receives */
/** Block until a message matching (source, tag) is available and describe it
 *  without receiving it. */
RDMX_API rdmx_status_t rdmx_probe(rdmx_context_h ctx, int source, int tag, rdmx_msg_info_t *info_p);
/** Nonblocking probe: *found_p = 1 and *info_p filled if a message matches. */
RDMX_API rdmx_status_t rdmx_iprobe(rdmx_context_h ctx, int source, int tag, int *found_p, rdmx_msg_info_t *info_p);
/** Static string naming a status; never NULL. */
RDMX_API const char *rdmx_strerror(rdmx_status_t status);

/**
 * Tag spaces. The user's tags live in RDMX_TAGSPACE_USER (what rdmx_isend and
 * rdmx_irecv use); rdmx's collectives use RDMX_TAGSPACE_COLL; other libraries
 * layered on rdmx use RDMX_TAGSPACE_LIB. A message never matches a receive
 * of another space, RDMX_ANY_TAG included. Same contract and errors as
 * rdmx_isend/rdmx_irecv; an unknown space is RDMX_ERR_INVALID_ARG.
 */
typedef enum { RDMX_TAGSPACE_USER = 0, RDMX_TAGSPACE_COLL = 1, RDMX_TAGSPACE_LIB = 2 } rdmx_tagspace_t;
RDMX_API rdmx_status_t rdmx_isend_in(rdmx_context_h ctx, rdmx_tagspace_t space, const void *buf, size_t len,
                                     int dest, int tag, rdmx_request_h *req_p);
RDMX_API rdmx_status_t rdmx_irecv_in(rdmx_context_h ctx, rdmx_tagspace_t space, void *buf, size_t len,
                                     int source, int tag, rdmx_request_h *req_p);

/* ---------------------------------------------------------------------------
 * Communicators. A communicator is a derived context: an rdmx_context_h over
 * a subset of the job's ranks that shares its parent's connections, memory
 * and progress. Every function that takes an rdmx_context_h works on it,
 * with ranks numbered 0..size-1 within it; a message sent on one
 * communicator never matches a receive or probe of another (wildcards
 * included). Creation is collective over the parent: every member calls it,
 * in the same order relative to the parent's other collectives. Derived
 * contexts are freed by rdmx_comm_free or, all at once, by rdmx_finalize of
 * the context rdmx_init made (the root); a handle is invalid afterwards.
 * Thread safety as for every context; communicators may be created on
 * different parents from different threads at once.
 * ------------------------------------------------------------------------- */
/** Partition ctx by `color` (>= 0, or RDMX_UNDEFINED to join none); members
 *  of a new communicator are ordered by (key, rank in ctx). *newctx_p is NULL
 *  for RDMX_UNDEFINED. Errors: INVALID_ARG (a negative colour other than
 *  RDMX_UNDEFINED), NO_MEMORY (no communicator id free on every member),
 *  PEER_LOST. */
RDMX_API rdmx_status_t rdmx_comm_split(rdmx_context_h ctx, int color, int key, rdmx_context_h *newctx_p); /* collective over ctx; order by (key, rank in ctx) */
/** A new communicator with ctx's members in ctx's order and its own message
 *  space (what a library layered on rdmx takes for itself). */
RDMX_API rdmx_status_t rdmx_comm_dup(rdmx_context_h ctx, rdmx_context_h *newctx_p);                    /* collective over ctx */
/** Free a derived context (not the root: that is rdmx_finalize's) and set
 *  *ctx_p = NULL. Local, not collective. Requests still pending on it stay
 *  valid and complete normally; its id is reused once the last of them is
 *  freed. Messages that arrived on it and were never received are dropped
 *  (a warning counts them). */
RDMX_API rdmx_status_t rdmx_comm_free(rdmx_context_h *ctx_p);      /* a derived context only; sets *ctx_p = NULL; rdmx_finalize of the root frees all */
/** Job rank (the root context's numbering) of ctx's member `rank`, -1 if out of range. */
RDMX_API int rdmx_comm_world_rank(rdmx_context_h ctx, int rank);   /* job rank of ctx's member `rank`, -1 if out of range */
/** Index of this rank among ctx's members on this node (-1 for an invalid context). */
RDMX_API int rdmx_local_rank(rdmx_context_h ctx);                  /* index among ctx's members on this node */
/** Number of ctx's members on this node (-1 for an invalid context). */
RDMX_API int rdmx_local_size(rdmx_context_h ctx);                  /* ctx's members on this node */
/** End every process of the job, as MPI_Abort: peers are told (they exit
 *  with `code` too), the launcher is asked to end the job where it can
 *  (PMIx, PMI), and this process exits with status `code` (& 255). Does
 *  not return unless ctx is invalid (INVALID_ARG). */
RDMX_API rdmx_status_t rdmx_abort(rdmx_context_h ctx, int code);   /* end every process of the job, exit status `code` where the launcher allows */
/** Send to `dest` and receive from `source` at once (no deadlock when two
 *  ranks exchange); either may be RDMX_PROC_NULL. info_p (may be NULL)
 *  describes the receive. Returns the first error of the two. */
RDMX_API rdmx_status_t rdmx_sendrecv(rdmx_context_h ctx, const void *sendbuf, size_t sendlen, int dest, int sendtag,
                                     void *recvbuf, size_t recvlen, int source, int recvtag, rdmx_msg_info_t *info_p);
/** Matched probe: a message taken off the matching queue by rdmx_mprobe or
 *  rdmx_improbe, so that no other receive or probe sees it, and received
 *  later by rdmx_mrecv/rdmx_imrecv into a buffer sized from its info (the
 *  probe-then-receive race of threads sharing a source is gone). A probe of
 *  RDMX_PROC_NULL finds at once an empty message (*msg_p NULL, which
 *  mrecv/imrecv then receive as PROC_NULL). Every matched message must be
 *  received; the handle is consumed (set to NULL) by the receive. */
typedef struct rdmx_message *rdmx_message_h;   /* a matched, not yet received message */
RDMX_API rdmx_status_t rdmx_mprobe(rdmx_context_h ctx, int source, int tag, rdmx_message_h *msg_p, rdmx_msg_info_t *info_p);
RDMX_API rdmx_status_t rdmx_improbe(rdmx_context_h ctx, int source, int tag, int *found_p, rdmx_message_h *msg_p, rdmx_msg_info_t *info_p);
RDMX_API rdmx_status_t rdmx_mrecv(void *buf, size_t len, rdmx_message_h *msg_p, rdmx_msg_info_t *info_p);
RDMX_API rdmx_status_t rdmx_imrecv(void *buf, size_t len, rdmx_message_h *msg_p, rdmx_request_h *req_p);

/* ---------------------------------------------------------------------------
 * Generalized requests and progress callbacks: how a layer above rdmx (its
 * nonblocking collectives, an MPI library) makes operations of its own that
 * the application completes with rdmx_test/rdmx_wait like any other.
 * ------------------------------------------------------------------------- */
/** A request that completes when rdmx_greq_complete is called on it (from
 *  any thread, e.g. a progress callback). Errors: INVALID_ARG, NO_MEMORY. */
RDMX_API rdmx_status_t rdmx_greq_start(rdmx_context_h ctx, rdmx_request_h *req_p);
/** Complete a generalized request with `status` (its info reports
 *  source RDMX_PROC_NULL, length 0). Exactly once per request, before the
 *  application's test/wait frees it. */
RDMX_API rdmx_status_t rdmx_greq_complete(rdmx_request_h req, rdmx_status_t status);
/** A function the engine calls on every progress pass of ctx's job (from the
 *  progress thread or a thread inside a wait, test or rdmx_progress), never
 *  under the engine's lock and never from two threads at once. It may call
 *  any rdmx function except rdmx_finalize and blocking waits; returns the
 *  number of events it handled. At most 16 per job; unregistered by the
 *  same (fn, arg) or by rdmx_finalize. */
typedef int (*rdmx_progress_fn_t)(void *arg);
RDMX_API rdmx_status_t rdmx_progress_register(rdmx_context_h ctx, rdmx_progress_fn_t fn, void *arg);
RDMX_API rdmx_status_t rdmx_progress_unregister(rdmx_context_h ctx, rdmx_progress_fn_t fn, void *arg);

/** Per-context values for layers above rdmx (as MPI's attribute caching): a
 *  layer creates a key once per process, then keeps its own state for each
 *  context under it; `free_fn` (may be NULL) is called on the value when
 *  it is replaced, and when the context is freed (rdmx_comm_free, or
 *  rdmx_finalize of its root) from the freeing thread. At most 64 keys.
 *  Errors: INVALID_ARG (a bad context or key), NO_MEMORY (no key left). */
typedef void (*rdmx_attr_free_fn_t)(void *value);
RDMX_API rdmx_status_t rdmx_attr_key_create(int *key_p);
RDMX_API rdmx_status_t rdmx_attr_set(rdmx_context_h ctx, int key, void *value, rdmx_attr_free_fn_t free_fn);
/** *value_p = the value set under `key`, NULL if none. */
RDMX_API rdmx_status_t rdmx_attr_get(rdmx_context_h ctx, int key, void **value_p);

/** Drive progress once from the calling thread (useful in RDMX_PROGRESS=caller
 *  mode for applications that poll). Returns the number of events handled. */
RDMX_API int rdmx_progress(rdmx_context_h ctx);

/** Seconds since an arbitrary point, monotonic, for benchmarks. */
RDMX_API double rdmx_wtime(void);

/**
 * Counters of one context, for tuning and tests. Initialise with
 * rdmx_stats_init() (it sets struct_size, so the struct may grow), then
 * rdmx_get_stats() fills in what this version knows. Thread safe; takes the
 * engine's lock briefly. Bytes are bytes; counts are since rdmx_init.
 * Errors: RDMX_ERR_INVALID_ARG for a NULL or finalized context, a NULL
 * stats, or a struct_size smaller than the first version of this struct.
 */
typedef struct rdmx_stats {
    size_t struct_size;              /* set by rdmx_stats_init */
    int rcache_enabled;              /* rendezvous registrations are cached (RDMX_RCACHE) */
    int rndv_windows;                /* rendezvous sends expose their bytes through memory windows */
    uint64_t rcache_hits;            /* rendezvous buffers found already registered */
    uint64_t rcache_misses;          /* registrations the cache made */
    uint64_t rcache_evictions;       /* idle registrations dropped to stay within the bound */
    uint64_t rcache_invalidations;   /* registrations dropped because their memory was released */
    size_t rcache_bytes;             /* bytes pinned by cached registrations now */
    size_t rcache_peak_bytes;        /* the most rcache_bytes has been */
    size_t rcache_max_bytes;         /* the bound on rcache_bytes (RDMX_RCACHE_MAX) */
    size_t rcache_transient_bytes;   /* bytes pinned outside the cache by transfers in flight */
    /* Added after the first version: filled when struct_size covers it. */
    uint64_t rc_connections;         /* peers connected over rc now (RDMX_CONNECT=lazy: only those used) */
} rdmx_stats_t;
RDMX_API void rdmx_stats_init(rdmx_stats_t *stats);
RDMX_API rdmx_status_t rdmx_get_stats(rdmx_context_h ctx, rdmx_stats_t *stats);

/**
 * The RDMA port a context's rc lane uses and its rate, for tools that compare
 * a measured bandwidth with what the link can carry (rdmx-bench).
 * Initialise with rdmx_port_info_init() (it sets struct_size, so the struct
 * may grow). The signalling rate is lanes x per-lane rate from the port's
 * speed and width; the data rate is what is left after the line encoding.
 * On RoCE the netdev's speed (/sys/class/net/IF/speed) is used when it is
 * known. A rank whose peers are all on its node (shared memory), or a
 * singleton, uses no port: device is "" and the rates are 0. Not on a hot
 * path: it opens the device for a moment.
 * Errors: RDMX_ERR_INVALID_ARG for a NULL or finalized context, a NULL info,
 * or a struct_size smaller than the first version of this struct (which
 * ended at `detail`; a caller built against it gets the fields it knows).
 */
typedef struct rdmx_port_info {
    size_t struct_size;   /* set by rdmx_port_info_init */
    char device[64];      /* "mlx5_0", "rxe0"; "" when the context uses no RDMA port */
    int port;             /* 1-based; 0 without a port */
    char kind[16];        /* "hardware", "soft-roce", "siw" or "unknown" */
    char source[16];      /* where the rate came from: "ibv_query_port", "netdev" or "unknown" */
    char speed[32];       /* "4x EDR", "100000 Mb/s Ethernet"; "" unknown */
    double signal_gbps;   /* lanes x per-lane signalling rate, Gb/s; 0 unknown */
    double data_gbps;     /* after the line encoding: what payload can use, Gb/s; 0 unknown */
    int netdev_mbps;      /* RoCE: the netdev's speed, Mb/s; -1 unknown (virtual NICs) */
    int rc_peers;         /* peers this rank reaches through the port */
    int sm_peers;         /* peers it reaches through shared memory instead */
    char detail[256];     /* one sentence: where the figures came from, or why they are unknown */
    /* Added after the first version: filled when struct_size covers them. */
    char fw_ver[64];      /* the device's firmware version; "" unknown (Soft-RoCE has none) */
    char state[16];       /* the port's state (ibv_port_state_str): "active", "down", "init", "armed"; "" no port */
    int active_mtu;       /* the port's active MTU in bytes; 0 unknown or no port */
    char link_layer[16];  /* "InfiniBand" or "Ethernet" (RoCE); "" without a port */
} rdmx_port_info_t;
RDMX_API void rdmx_port_info_init(rdmx_port_info_t *info);
RDMX_API rdmx_status_t rdmx_get_port_info(rdmx_context_h ctx, rdmx_port_info_t *info);

/**
 * The context's effective configuration, for tools that record what a run
 * used (rdmx-bench's JSON): one line per setting, in rdmx-info's order,
 * "NAME<TAB>VALUE<TAB>SOURCE<LF>", where SOURCE is "default", "environment"
 * or "config struct" (the rdmx_config_t passed to rdmx_init). Tabs and line breaks
 * inside a value are written as spaces. Writes at most len bytes into buf
 * (NUL-terminated when len > 0; buf may be NULL when len is 0) and returns
 * the length of the whole text without the NUL, as snprintf does: call it
 * with len 0 to size the buffer. Returns 0 for a NULL or finalized context
 * (logged). Not on a hot path.
 */
RDMX_API size_t rdmx_config_text(rdmx_context_h ctx, char *buf, size_t len);

/* ---------------------------------------------------------------------------
 * Collectives. All ranks call them in the same order with matching
 * arguments; one blocking collective at a time per context (as in MPI;
 * nonblocking ones may overlap, see below). Buffers are
 * counted in elements of `dt` for reductions and in bytes elsewhere.
 * Bitwise ops on floating types, a root out of range or overlapping buffers
 * (other than RDMX_IN_PLACE) return RDMX_ERR_INVALID_ARG; a failed peer
 * returns RDMX_ERR_PEER_LOST. Root-only buffers (reduce's recvbuf, gather's
 * recvbuf, scatter's sendbuf) may be NULL on other ranks. Reduction results
 * are identical on every rank; floating-point results may differ between
 * algorithms within the tolerances in docs/collectives.md.
 * Example: rdmx_allreduce(ctx, RDMX_IN_PLACE, v, n, RDMX_DOUBLE, RDMX_SUM);
 * ------------------------------------------------------------------------- */
/* Pair types (for MINLOC/MAXLOC only) are the C structs {float v; int i;},
 * {double v; int i;} and {int v; int i;}, padding included in their size. */
typedef enum { RDMX_INT8, RDMX_INT16, RDMX_INT32, RDMX_INT64, RDMX_UINT8, RDMX_UINT16, RDMX_UINT32,
               RDMX_UINT64, RDMX_FLOAT, RDMX_DOUBLE, RDMX_FLOAT_INT, RDMX_DOUBLE_INT, RDMX_INT_INT } rdmx_datatype_t;
/* MINLOC/MAXLOC: pair types only; the extreme value with its index, ties
 * keep the lower index. Other ops take the scalar types only. */
typedef enum { RDMX_SUM, RDMX_PROD, RDMX_MIN, RDMX_MAX, RDMX_BAND, RDMX_BOR, RDMX_BXOR,
               RDMX_MINLOC, RDMX_MAXLOC } rdmx_op_t;
#define RDMX_IN_PLACE ((const void *)1)   /* as sendbuf of allreduce/reduce/allgather */

RDMX_API rdmx_status_t rdmx_barrier(rdmx_context_h ctx);
RDMX_API rdmx_status_t rdmx_bcast(rdmx_context_h ctx, void *buf, size_t len, int root);
RDMX_API rdmx_status_t rdmx_reduce(rdmx_context_h ctx, const void *sendbuf, void *recvbuf, size_t count,
                                   rdmx_datatype_t dt, rdmx_op_t op, int root);
RDMX_API rdmx_status_t rdmx_allreduce(rdmx_context_h ctx, const void *sendbuf, void *recvbuf, size_t count,
                                      rdmx_datatype_t dt, rdmx_op_t op);
RDMX_API rdmx_status_t rdmx_reduce_scatter_block(rdmx_context_h ctx, const void *sendbuf, void *recvbuf,
                                                 size_t count_per_rank, rdmx_datatype_t dt, rdmx_op_t op);
RDMX_API rdmx_status_t rdmx_allgather(rdmx_context_h ctx, const void *sendbuf, size_t len, void *recvbuf);   /* recvbuf: size*len bytes */
RDMX_API rdmx_status_t rdmx_gather(rdmx_context_h ctx, const void *sendbuf, size_t len, void *recvbuf, int root);
RDMX_API rdmx_status_t rdmx_scatter(rdmx_context_h ctx, const void *sendbuf, size_t len, void *recvbuf, int root);
RDMX_API rdmx_status_t rdmx_alltoall(rdmx_context_h ctx, const void *sendbuf, size_t len, void *recvbuf);    /* len bytes per peer */
/** Inclusive prefix reduction: rank r gets op over ranks 0..r. RDMX_IN_PLACE allowed. */
RDMX_API rdmx_status_t rdmx_scan(rdmx_context_h ctx, const void *sendbuf, void *recvbuf, size_t count, rdmx_datatype_t dt, rdmx_op_t op);
/** Exclusive prefix reduction: rank r gets op over ranks 0..r-1. */
RDMX_API rdmx_status_t rdmx_exscan(rdmx_context_h ctx, const void *sendbuf, void *recvbuf, size_t count, rdmx_datatype_t dt, rdmx_op_t op); /* rank 0's recvbuf untouched */
/* v-collectives; lengths and displacements in bytes, per rank of ctx */
RDMX_API rdmx_status_t rdmx_allgatherv(rdmx_context_h ctx, const void *sendbuf, size_t len, void *recvbuf, const size_t lens[], const size_t displs[]);
RDMX_API rdmx_status_t rdmx_gatherv(rdmx_context_h ctx, const void *sendbuf, size_t len, void *recvbuf, const size_t lens[], const size_t displs[], int root);
RDMX_API rdmx_status_t rdmx_scatterv(rdmx_context_h ctx, const void *sendbuf, const size_t lens[], const size_t displs[], void *recvbuf, size_t len, int root);
RDMX_API rdmx_status_t rdmx_alltoallv(rdmx_context_h ctx, const void *sendbuf, const size_t sendlens[], const size_t sdispls[],
                                      void *recvbuf, const size_t recvlens[], const size_t rdispls[]);
/* Nonblocking collectives: the blocking call's arguments plus a request,
 * completed by rdmx_test/rdmx_wait/... Several may be outstanding on one
 * communicator (started in the same order on every member, and in the same
 * order relative to its blocking collectives); they advance without the
 * application calling in when the progress thread runs, else inside its
 * rdmx calls. Buffers must not be touched until the request completes. */
RDMX_API rdmx_status_t rdmx_ibarrier(rdmx_context_h ctx, rdmx_request_h *req_p);
RDMX_API rdmx_status_t rdmx_ibcast(rdmx_context_h ctx, void *buf, size_t len, int root, rdmx_request_h *req_p);
RDMX_API rdmx_status_t rdmx_ireduce(rdmx_context_h ctx, const void *sendbuf, void *recvbuf, size_t count, rdmx_datatype_t dt, rdmx_op_t op, int root, rdmx_request_h *req_p);
RDMX_API rdmx_status_t rdmx_iallreduce(rdmx_context_h ctx, const void *sendbuf, void *recvbuf, size_t count, rdmx_datatype_t dt, rdmx_op_t op, rdmx_request_h *req_p);
RDMX_API rdmx_status_t rdmx_iallgather(rdmx_context_h ctx, const void *sendbuf, size_t len, void *recvbuf, rdmx_request_h *req_p);
RDMX_API rdmx_status_t rdmx_ialltoall(rdmx_context_h ctx, const void *sendbuf, size_t len, void *recvbuf, rdmx_request_h *req_p);
RDMX_API rdmx_status_t rdmx_ialltoallv(rdmx_context_h ctx, const void *sendbuf, const size_t sendlens[], const size_t sdispls[],
                                       void *recvbuf, const size_t recvlens[], const size_t rdispls[], rdmx_request_h *req_p);

#ifdef __cplusplus
}
#endif
#endif /* RDMX_RDMX_H */
