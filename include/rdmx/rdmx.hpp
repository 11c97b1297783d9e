/*
 * rdmx.hpp: a thin, header-only C++20 layer over the C API in rdmx.h.
 *
 *     #include <rdmx/rdmx.hpp>
 *
 *     rdmx::Context ctx;                          // rdmx_init(NULL, ...)
 *     std::vector<double> v(n);
 *     if (ctx.rank() == 0) ctx.send(std::span(v), 1, 7);
 *     else                 ctx.recv(std::span(v), 0, 7);
 *                                                 // ~Context: rdmx_finalize
 *
 *     rdmx::Communicator row = ctx.split(ctx.rank() / 4, ctx.rank());
 *     row.allreduce(std::span(v), RDMX_SUM);      // ~Communicator: rdmx_comm_free
 *
 * Communicators: rdmx::CommRef carries every call that takes an
 * rdmx_context_h and owns nothing; rdmx::Context (the job, rdmx_init) and
 * rdmx::Communicator (split/dup, rdmx_comm_free) are CommRefs that own their
 * handles. Write functions that take a `rdmx::CommRef` to accept either.
 *
 * It adds ownership and exceptions, nothing else: every call maps to one C
 * call (or a few, for the destructors), with the C API's semantics,
 * thread-safety and deadlines (see rdmx.h). It uses only rdmx.h and the
 * standard library and needs no extra link flags beyond librdmx.
 *
 * Error handling:
 *  - Errors are exceptions: a function or method throws rdmx::Error (a
 *    std::runtime_error carrying the rdmx_status_t, see Error::status()) when
 *    the C call it makes does not return RDMX_OK.
 *  - Except where a method returns rdmx_status_t: Request::wait() and
 *    Request::test() are noexcept and return the operation's own status as a
 *    value (RDMX_ERR_TRUNCATE, RDMX_ERR_CANCELED, RDMX_ERR_PEER_LOST, ...;
 *    test() returns RDMX_INPROGRESS while the request is pending), so code
 *    that expects truncation or cancellation need not catch anything.
 *  - Destructors never throw: they ignore the status of the C calls they make.
 *
 * Buffers are std::span<const std::byte> (sends) and std::span<std::byte>
 * (receives), or std::span<T> of any trivially copyable T (sent as its bytes;
 * pass std::span(vector) or std::span(array)). The caller owns every buffer;
 * for isend/irecv it must stay valid, and for isend unchanged, until the
 * request completes.
 *
 * Thread safety: as in the C API, any thread may use one Context
 * concurrently, except for its construction, destruction, finalize() and
 * moves (the same holds for a Communicator). Request, Message and
 * ProgressHook objects are not synchronised: use each one from one thread
 * at a time. Complete or destroy every Request, Message, ProgressHook and
 * Communicator before the Context they came from is finalized.
 */
#ifndef RDMX_RDMX_HPP
#define RDMX_RDMX_HPP

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "rdmx.h"

namespace rdmx {

/** The exception thrown for any status other than RDMX_OK. what() is
 *  "<C function>: <rdmx_strerror(status)>". */
class Error : public std::runtime_error {
public:
    /** `where` names the C function that failed; `info` is what a receive saw
     *  (meaningful for RDMX_ERR_TRUNCATE from Context::recv / Request::get). */
    Error(rdmx_status_t status, const char *where, const rdmx_msg_info_t &info = {})
        : std::runtime_error(std::string(where) + ": " + rdmx_strerror(status)), status_(status), info_(info) {}
    /** The rdmx_status_t the C API returned. */
    rdmx_status_t status() const noexcept { return status_; }
    /** For receives: source, tag and full sent length (e.g. of a truncated message). */
    const rdmx_msg_info_t &info() const noexcept { return info_; }

private:
    rdmx_status_t status_;
    rdmx_msg_info_t info_;
};

namespace detail {
inline void check(rdmx_status_t st, const char *where, const rdmx_msg_info_t &info = {}) {
    if (st != RDMX_OK) throw Error(st, where, info);
}
template <class T>
inline constexpr bool writable_v = std::is_trivially_copyable_v<T> && !std::is_const_v<T>;
}  // namespace detail

/** The pair types of RDMX_MINLOC / RDMX_MAXLOC, laid out as rdmx.h's C
 *  structs {float v; int i;}, {double v; int i;} and {int v; int i;} (padding
 *  included): `v` the value, `i` its index (e.g. a rank). Ties keep the lower
 *  index. */
struct FloatInt {
    float v;
    int i;
    friend bool operator==(const FloatInt &, const FloatInt &) = default;
};
/** {double v; int i;}: see FloatInt. */
struct DoubleInt {
    double v;
    int i;
    friend bool operator==(const DoubleInt &, const DoubleInt &) = default;
};
/** {int v; int i;}: see FloatInt. */
struct IntInt {
    int v;
    int i;
    friend bool operator==(const IntInt &, const IntInt &) = default;
};

// The C layout of rdmx.h's pairs: the value first, the index right after it.
static_assert(std::is_standard_layout_v<FloatInt> && offsetof(FloatInt, i) == sizeof(float));
static_assert(std::is_standard_layout_v<DoubleInt> && offsetof(DoubleInt, i) == sizeof(double));
static_assert(std::is_standard_layout_v<IntInt> && offsetof(IntInt, i) == sizeof(int));

/** FloatInt, DoubleInt or IntInt: the element types of RDMX_MINLOC and
 *  RDMX_MAXLOC (and of no other op). */
template <class T>
concept PairType = std::is_same_v<T, FloatInt> || std::is_same_v<T, DoubleInt> || std::is_same_v<T, IntInt>;

/** Element types the reductions accept: integers of 1, 2, 4 or 8 bytes (not
 *  bool), float and double, and the PairType structs (for RDMX_MINLOC and
 *  RDMX_MAXLOC only: the C API rejects other combinations with
 *  RDMX_ERR_INVALID_ARG). */
template <class T>
concept Reducible = (std::is_integral_v<T> && !std::is_same_v<T, bool> &&
                     (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8)) ||
                    std::is_same_v<T, float> || std::is_same_v<T, double> || PairType<T>;

/** The rdmx_datatype_t of a Reducible type, e.g. datatype_of<double>() == RDMX_DOUBLE,
 *  datatype_of<DoubleInt>() == RDMX_DOUBLE_INT. */
template <Reducible T>
constexpr rdmx_datatype_t datatype_of() noexcept {
    if constexpr (std::is_same_v<T, FloatInt>) {
        return RDMX_FLOAT_INT;
    } else if constexpr (std::is_same_v<T, DoubleInt>) {
        return RDMX_DOUBLE_INT;
    } else if constexpr (std::is_same_v<T, IntInt>) {
        return RDMX_INT_INT;
    } else if constexpr (std::is_same_v<T, float>) {
        return RDMX_FLOAT;
    } else if constexpr (std::is_same_v<T, double>) {
        return RDMX_DOUBLE;
    } else if constexpr (std::is_signed_v<T>) {
        return sizeof(T) == 1 ? RDMX_INT8 : sizeof(T) == 2 ? RDMX_INT16 : sizeof(T) == 4 ? RDMX_INT32 : RDMX_INT64;
    } else {
        return sizeof(T) == 1 ? RDMX_UINT8 : sizeof(T) == 2 ? RDMX_UINT16 : sizeof(T) == 4 ? RDMX_UINT32 : RDMX_UINT64;
    }
}

/** Seconds since an arbitrary point, monotonic (rdmx_wtime). */
inline double wtime() noexcept { return rdmx_wtime(); }

/**
 * Owns one rdmx_request_h (from Context::isend / Context::irecv). Movable, not
 * copyable. An empty Request (default-constructed, moved from, or completed)
 * counts as completed with RDMX_OK, like MPI_REQUEST_NULL. The destructor of
 * a pending Request cancels it (rdmx_cancel: only a receive that has not
 * matched yet is cancelled) and then waits for it: destroying a pending send
 * blocks until the send completes or fails.
 */
class Request {
public:
    Request() noexcept = default;
    /** Adopt a handle from the C API (may be NULL). */
    explicit Request(rdmx_request_h h) noexcept : h_(h) {}
    Request(const Request &) = delete;
    Request &operator=(const Request &) = delete;
    Request(Request &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
    Request &operator=(Request &&o) noexcept {
        if (this != &o) {
            abandon();
            h_ = std::exchange(o.h_, nullptr);
        }
        return *this;
    }
    ~Request() { abandon(); }

    /** True while the request has not been completed by wait/test/get. */
    bool pending() const noexcept { return h_ != nullptr; }
    explicit operator bool() const noexcept { return pending(); }

    /** Wait for completion (rdmx_wait) and return the operation's own status;
     *  never throws. *info (if given) receives source, tag and sent length. */
    [[nodiscard]] rdmx_status_t wait(rdmx_msg_info_t *info = nullptr) noexcept { return rdmx_wait(&h_, info); }
    /** Check once (rdmx_test): RDMX_INPROGRESS while pending, else the
     *  operation's own status (and the request becomes empty); never throws. */
    [[nodiscard]] rdmx_status_t test(rdmx_msg_info_t *info = nullptr) noexcept {
        int done = 0;
        return rdmx_test(&h_, &done, info);
    }
    /** Wait and return what the operation saw; throws rdmx::Error on any
     *  status but RDMX_OK (RDMX_ERR_TRUNCATE included, see Error::info()). */
    rdmx_msg_info_t get() {
        rdmx_msg_info_t info{RDMX_ANY_SOURCE, RDMX_ANY_TAG, 0, RDMX_OK};
        detail::check(rdmx_wait(&h_, &info), "rdmx_wait", info);
        return info;
    }
    /** Cancel a receive that has not matched yet (rdmx_cancel); it then
     *  completes with RDMX_ERR_CANCELED. No effect on sends or matched receives. */
    void cancel() {
        if (h_ != nullptr) detail::check(rdmx_cancel(h_), "rdmx_cancel");
    }

    /** The C handle (still owned by this object). */
    rdmx_request_h native_handle() const noexcept { return h_; }
    /** Give up ownership: the caller must complete the handle with rdmx_wait/rdmx_test. */
    rdmx_request_h release() noexcept { return std::exchange(h_, nullptr); }

private:
    void abandon() noexcept {
        if (h_ != nullptr) {
            (void)rdmx_cancel(h_);
            (void)rdmx_wait(&h_, nullptr);
        }
    }
    rdmx_request_h h_ = nullptr;
};

/** Wait for every request (rdmx_waitall); all of them are completed and empty
 *  afterwards, whatever happened. Throws the first error in array order. */
inline void wait_all(std::span<Request> reqs) {
    std::vector<rdmx_request_h> hs;
    hs.reserve(reqs.size());
    for (Request &r : reqs) hs.push_back(r.release());
    detail::check(rdmx_waitall(hs.size(), hs.data(), nullptr), "rdmx_waitall");
}

/** Complete a generalized request (rdmx_greq_complete) with `status`: from
 *  any thread, exactly once, while the Request that owns the handle (from
 *  CommRef::greq_start) waits for it or before it does. */
inline void greq_complete(rdmx_request_h req, rdmx_status_t status) {
    detail::check(rdmx_greq_complete(req, status), "rdmx_greq_complete");
}

/** A new key for per-communicator values (rdmx_attr_key_create): one per
 *  process for each layer that keeps state per communicator. */
inline int attr_key_create() {
    int key = -1;
    detail::check(rdmx_attr_key_create(&key), "rdmx_attr_key_create");
    return key;
}

/**
 * Owns one matched message (rdmx_message_h), from CommRef::mprobe or
 * CommRef::improbe: taken off the matching queue, so no other receive or probe
 * sees it. Movable, not copyable. Receive it with recv() or irecv() into a
 * buffer sized from info().length. An empty Message (default-constructed,
 * moved from, already received, or matched from RDMX_PROC_NULL) receives as
 * RDMX_PROC_NULL: nothing moves, the info says source RDMX_PROC_NULL, length
 * 0. The destructor of a Message never received receives it into no buffer
 * (rdmx_mrecv of 0 bytes), dropping its data, since the C API requires every
 * matched message to be received.
 */
class Message {
public:
    Message() noexcept = default;
    /** Adopt a handle from the C API (may be NULL) with what its probe saw. */
    Message(rdmx_message_h h, const rdmx_msg_info_t &info) noexcept : h_(h), info_(info) {}
    Message(const Message &) = delete;
    Message &operator=(const Message &) = delete;
    Message(Message &&o) noexcept : h_(std::exchange(o.h_, nullptr)), info_(o.info_) {}
    Message &operator=(Message &&o) noexcept {
        if (this != &o) {
            drop();
            h_ = std::exchange(o.h_, nullptr);
            info_ = o.info_;
        }
        return *this;
    }
    ~Message() { drop(); }

    /** What the probe saw: source, tag and the length sent, in bytes. */
    const rdmx_msg_info_t &info() const noexcept { return info_; }
    /** True while the message waits to be received. */
    bool pending() const noexcept { return h_ != nullptr; }

    /** Receive it (rdmx_mrecv) into `buf`; throws rdmx::Error on any status
     *  but RDMX_OK (RDMX_ERR_TRUNCATE included, see Error::info()). */
    rdmx_msg_info_t recv(std::span<std::byte> buf) { return recv_raw(buf.data(), buf.size()); }
    /** Receive it into a span of trivially copyable, non-const T. */
    template <class T, std::size_t N>
        requires detail::writable_v<T>
    rdmx_msg_info_t recv(std::span<T, N> buf) {
        return recv_raw(buf.data(), buf.size_bytes());
    }
    /** Receive it nonblocking (rdmx_imrecv); `buf` must stay valid until the
     *  Request completes. Truncation shows in the Request's status. */
    [[nodiscard]] Request irecv(std::span<std::byte> buf) { return irecv_raw(buf.data(), buf.size()); }
    /** Nonblocking receive into a span of trivially copyable, non-const T. */
    template <class T, std::size_t N>
        requires detail::writable_v<T>
    [[nodiscard]] Request irecv(std::span<T, N> buf) {
        return irecv_raw(buf.data(), buf.size_bytes());
    }

    /** The C handle (still owned by this object). */
    rdmx_message_h native_handle() const noexcept { return h_; }
    /** Give up ownership: the caller must receive it with rdmx_mrecv/rdmx_imrecv. */
    rdmx_message_h release() noexcept { return std::exchange(h_, nullptr); }

private:
    rdmx_msg_info_t recv_raw(void *p, std::size_t n) {
        rdmx_msg_info_t info{info_.source, info_.tag, 0, RDMX_OK};
        detail::check(rdmx_mrecv(p, n, &h_, &info), "rdmx_mrecv", info);
        return info;
    }
    Request irecv_raw(void *p, std::size_t n) {
        rdmx_request_h r = nullptr;
        detail::check(rdmx_imrecv(p, n, &h_, &r), "rdmx_imrecv");
        return Request(r);
    }
    void drop() noexcept {
        char sink = 0;   // a valid buffer of no length: every byte is dropped
        if (h_ != nullptr) (void)rdmx_mrecv(&sink, 0, &h_, nullptr);
    }
    rdmx_message_h h_ = nullptr;
    rdmx_msg_info_t info_{RDMX_PROC_NULL, RDMX_ANY_TAG, 0, RDMX_OK};
};

/**
 * Owns the registration of a progress callback (CommRef::on_progress): the
 * destructor unregisters it (rdmx_progress_unregister). Movable, not
 * copyable. `fn` and `arg` stay the caller's: keep them valid while
 * registered. rdmx_finalize of the job unregisters every callback, so
 * destroy this object before the Context, or its unregister fails (ignored).
 */
class ProgressHook {
public:
    ProgressHook() noexcept = default;
    ProgressHook(const ProgressHook &) = delete;
    ProgressHook &operator=(const ProgressHook &) = delete;
    ProgressHook(ProgressHook &&o) noexcept
        : ctx_(std::exchange(o.ctx_, nullptr)), fn_(std::exchange(o.fn_, nullptr)), arg_(o.arg_) {}
    ProgressHook &operator=(ProgressHook &&o) noexcept {
        if (this != &o) {
            drop();
            ctx_ = std::exchange(o.ctx_, nullptr);
            fn_ = std::exchange(o.fn_, nullptr);
            arg_ = o.arg_;
        }
        return *this;
    }
    ~ProgressHook() { drop(); }

    /** True while registered. */
    explicit operator bool() const noexcept { return fn_ != nullptr; }
    /** Unregister now, reporting the status (the destructor cannot). */
    void reset() {
        if (fn_ != nullptr)
            detail::check(rdmx_progress_unregister(std::exchange(ctx_, nullptr), std::exchange(fn_, nullptr), arg_),
                          "rdmx_progress_unregister");
    }

private:
    friend class CommRef;
    ProgressHook(rdmx_context_h ctx, rdmx_progress_fn_t fn, void *arg) noexcept : ctx_(ctx), fn_(fn), arg_(arg) {}
    void drop() noexcept {
        if (fn_ != nullptr) (void)rdmx_progress_unregister(std::exchange(ctx_, nullptr), std::exchange(fn_, nullptr), arg_);
    }
    rdmx_context_h ctx_ = nullptr;
    rdmx_progress_fn_t fn_ = nullptr;
    void *arg_ = nullptr;
};

class Communicator;

namespace detail {
// A v-collective's layout: one length and one displacement per rank, and
// every block inside the buffer, since the C call trusts both arrays and
// would otherwise write past the caller's span.
inline void check_layout(std::span<const std::size_t> lens, std::span<const std::size_t> displs, int nranks,
                         std::size_t capacity, const char *where) {
    if (nranks < 0 || lens.size() != static_cast<std::size_t>(nranks) || displs.size() != lens.size())
        throw Error(RDMX_ERR_INVALID_ARG, where);
    for (std::size_t i = 0; i < lens.size(); ++i) {
        if (displs[i] > capacity || lens[i] > capacity - displs[i]) throw Error(RDMX_ERR_INVALID_ARG, where);
    }
}
}  // namespace detail

/**
 * A communicator, not owned: every call of the C API that takes an
 * rdmx_context_h, on the handle it holds, with ranks numbered within it.
 * Context (the job's root, from rdmx_init) and Communicator (from split or
 * dup) own their handles and are CommRefs; a CommRef copied from either is a
 * view that must not outlive its owner. Copyable; a default-constructed
 * CommRef is empty (rank() and size() return -1, calls fail with
 * RDMX_ERR_INVALID_ARG). Thread safety as in the C API.
 */
class CommRef {
public:
    CommRef() noexcept = default;
    /** View a C handle (not taken over). */
    explicit CommRef(rdmx_context_h h) noexcept : ctx_(h) {}

    /** This process's rank, 0..size()-1 (-1 if empty). */
    int rank() const noexcept { return rdmx_rank(ctx_); }
    /** Number of processes in the communicator (-1 if empty). */
    int size() const noexcept { return rdmx_size(ctx_); }
    /** Job rank (the Context's numbering) of member `r` (rdmx_comm_world_rank), -1 if out of range. */
    int world_rank(int r) const noexcept { return rdmx_comm_world_rank(ctx_, r); }
    /** Index of this process among the members on its node (rdmx_local_rank). */
    int local_rank() const noexcept { return rdmx_local_rank(ctx_); }
    /** Number of members on this node (rdmx_local_size). */
    int local_size() const noexcept { return rdmx_local_size(ctx_); }
    /** The C handle (not owned by a CommRef), for calls this layer lacks. */
    rdmx_context_h native_handle() const noexcept { return ctx_; }
    explicit operator bool() const noexcept { return ctx_ != nullptr; }

    /** rdmx_comm_split, collective: a new Communicator of the members that
     *  pass the same `color` (>= 0), ordered by (key, rank()); an empty one
     *  for RDMX_UNDEFINED. */
    [[nodiscard]] Communicator split(int color, int key) const;
    /** rdmx_comm_dup, collective: the same members in the same order, with a
     *  message space of their own. */
    [[nodiscard]] Communicator dup() const;
    /** rdmx_abort: end every process of the job with exit status `code`.
     *  Does not return (throws rdmx::Error if the C call does). */
    [[noreturn]] void abort(int code) const {
        detail::check(rdmx_abort(ctx_, code), "rdmx_abort");
        throw Error(RDMX_ERR_INTERNAL, "rdmx_abort returned");
    }

    /** Blocking send (rdmx_send): returns when `buf` may be reused. `dest`
     *  may be RDMX_PROC_NULL (nothing is sent). */
    void send(std::span<const std::byte> buf, int dest, int tag) const { send_raw(buf.data(), buf.size(), dest, tag); }
    /** Blocking send of the bytes of a span of trivially copyable T. */
    template <class T, std::size_t N>
        requires std::is_trivially_copyable_v<T>
    void send(std::span<T, N> buf, int dest, int tag) const {
        send_raw(buf.data(), buf.size_bytes(), dest, tag);
    }

    /** Blocking receive (rdmx_recv) into `buf` from `source` (or
     *  RDMX_ANY_SOURCE, or RDMX_PROC_NULL) with `tag` (or RDMX_ANY_TAG). A
     *  longer message throws rdmx::Error with RDMX_ERR_TRUNCATE after filling
     *  `buf` (use irecv and Request::wait to treat truncation as a value). */
    rdmx_msg_info_t recv(std::span<std::byte> buf, int source = RDMX_ANY_SOURCE, int tag = RDMX_ANY_TAG) const {
        return recv_raw(buf.data(), buf.size(), source, tag);
    }
    /** Blocking receive into a span of trivially copyable, non-const T. */
    template <class T, std::size_t N>
        requires detail::writable_v<T>
    rdmx_msg_info_t recv(std::span<T, N> buf, int source = RDMX_ANY_SOURCE, int tag = RDMX_ANY_TAG) const {
        return recv_raw(buf.data(), buf.size_bytes(), source, tag);
    }

    /** Nonblocking send (rdmx_isend); `buf` must stay valid and unchanged
     *  until the Request completes. */
    [[nodiscard]] Request isend(std::span<const std::byte> buf, int dest, int tag) const {
        return isend_raw(buf.data(), buf.size(), dest, tag);
    }
    /** Nonblocking send of a span of trivially copyable T. */
    template <class T, std::size_t N>
        requires std::is_trivially_copyable_v<T>
    [[nodiscard]] Request isend(std::span<T, N> buf, int dest, int tag) const {
        return isend_raw(buf.data(), buf.size_bytes(), dest, tag);
    }
    /** Nonblocking receive (rdmx_irecv); `buf` must stay valid until the
     *  Request completes. Truncation shows in the Request's status. */
    [[nodiscard]] Request irecv(std::span<std::byte> buf, int source = RDMX_ANY_SOURCE,
                                int tag = RDMX_ANY_TAG) const {
        return irecv_raw(buf.data(), buf.size(), source, tag);
    }
    /** Nonblocking receive into a span of trivially copyable, non-const T. */
    template <class T, std::size_t N>
        requires detail::writable_v<T>
    [[nodiscard]] Request irecv(std::span<T, N> buf, int source = RDMX_ANY_SOURCE, int tag = RDMX_ANY_TAG) const {
        return irecv_raw(buf.data(), buf.size_bytes(), source, tag);
    }

    /** rdmx_sendrecv: send `sendbuf` to `dest` and receive into `recvbuf` from
     *  `source` at once (no deadlock when two ranks exchange); either peer
     *  may be RDMX_PROC_NULL. Returns what the receive saw; throws
     *  rdmx::Error on the first error of the two (RDMX_ERR_TRUNCATE included). */
    template <class T, std::size_t N, class U, std::size_t M>
        requires std::is_trivially_copyable_v<T> && detail::writable_v<U>
    rdmx_msg_info_t sendrecv(std::span<T, N> sendbuf, int dest, int sendtag, std::span<U, M> recvbuf,
                             int source = RDMX_ANY_SOURCE, int recvtag = RDMX_ANY_TAG) const {
        rdmx_msg_info_t info{source, recvtag, 0, RDMX_OK};
        detail::check(rdmx_sendrecv(ctx_, sendbuf.data(), sendbuf.size_bytes(), dest, sendtag, recvbuf.data(),
                                    recvbuf.size_bytes(), source, recvtag, &info),
                      "rdmx_sendrecv", info);
        return info;
    }

    /** Block until a matching message is available (rdmx_probe) and describe it. */
    rdmx_msg_info_t probe(int source = RDMX_ANY_SOURCE, int tag = RDMX_ANY_TAG) const {
        rdmx_msg_info_t info{};
        detail::check(rdmx_probe(ctx_, source, tag, &info), "rdmx_probe");
        return info;
    }
    /** Describe a matching message if one is available now (rdmx_iprobe). */
    std::optional<rdmx_msg_info_t> iprobe(int source = RDMX_ANY_SOURCE, int tag = RDMX_ANY_TAG) const {
        rdmx_msg_info_t info{};
        int found = 0;
        detail::check(rdmx_iprobe(ctx_, source, tag, &found, &info), "rdmx_iprobe");
        if (found == 0) return std::nullopt;
        return info;
    }
    /** Matched probe (rdmx_mprobe): block until a matching message is
     *  available and take it off the queue, for this caller alone to receive. */
    [[nodiscard]] Message mprobe(int source = RDMX_ANY_SOURCE, int tag = RDMX_ANY_TAG) const {
        rdmx_message_h h = nullptr;
        rdmx_msg_info_t info{};
        detail::check(rdmx_mprobe(ctx_, source, tag, &h, &info), "rdmx_mprobe");
        return Message(h, info);
    }
    /** Matched probe if a message is available now (rdmx_improbe). */
    [[nodiscard]] std::optional<Message> improbe(int source = RDMX_ANY_SOURCE, int tag = RDMX_ANY_TAG) const {
        rdmx_message_h h = nullptr;
        rdmx_msg_info_t info{};
        int found = 0;
        detail::check(rdmx_improbe(ctx_, source, tag, &found, &h, &info), "rdmx_improbe");
        if (found == 0) return std::nullopt;
        return std::optional<Message>(std::in_place, h, info);
    }
    /** Drive progress once (rdmx_progress); returns the number of events handled. */
    int progress() const noexcept { return rdmx_progress(ctx_); }

    /** A generalized request (rdmx_greq_start): pending until
     *  rdmx::greq_complete(request.native_handle(), status) is called (so
     *  the Request's destructor waits for that call). */
    [[nodiscard]] Request greq_start() const {
        rdmx_request_h h = nullptr;
        detail::check(rdmx_greq_start(ctx_, &h), "rdmx_greq_start");
        return Request(h);
    }
    /** Register `fn(arg)` to run on every progress pass of the job
     *  (rdmx_progress_register, see rdmx.h for where it runs and what it may
     *  call); unregistered when the returned ProgressHook goes. */
    [[nodiscard]] ProgressHook on_progress(rdmx_progress_fn_t fn, void *arg) const {
        detail::check(rdmx_progress_register(ctx_, fn, arg), "rdmx_progress_register");
        return ProgressHook(ctx_, fn, arg);
    }

    /** Keep `value` under `key` on this communicator (rdmx_attr_set);
     *  `free_fn` (may be NULL) is called on it when it is replaced or the
     *  communicator is freed. */
    void attr_set(int key, void *value, rdmx_attr_free_fn_t free_fn = nullptr) const {
        detail::check(rdmx_attr_set(ctx_, key, value, free_fn), "rdmx_attr_set");
    }
    /** The value kept under `key` (rdmx_attr_get), nullptr if none. */
    void *attr_get(int key) const {
        void *value = nullptr;
        detail::check(rdmx_attr_get(ctx_, key, &value), "rdmx_attr_get");
        return value;
    }

    /** rdmx_barrier. */
    void barrier() const { detail::check(rdmx_barrier(ctx_), "rdmx_barrier"); }
    /** rdmx_bcast of the bytes of `buf` from `root`. */
    template <class T, std::size_t N>
        requires detail::writable_v<T>
    void bcast(std::span<T, N> buf, int root) const {
        detail::check(rdmx_bcast(ctx_, buf.data(), buf.size_bytes(), root), "rdmx_bcast");
    }
    /** rdmx_allreduce of in.size() elements into `out` (same size, no overlap). */
    template <Reducible T, std::size_t N, std::size_t M>
    void allreduce(std::span<const T, N> in, std::span<T, M> out, rdmx_op_t op) const {
        same_count(in.size(), out.size(), "rdmx::CommRef::allreduce (sizes differ)");
        detail::check(rdmx_allreduce(ctx_, in.data(), out.data(), in.size(), datatype_of<T>(), op), "rdmx_allreduce");
    }
    /** In-place rdmx_allreduce (RDMX_IN_PLACE) over `inout`. */
    template <Reducible T, std::size_t N>
    void allreduce(std::span<T, N> inout, rdmx_op_t op) const {
        detail::check(rdmx_allreduce(ctx_, RDMX_IN_PLACE, inout.data(), inout.size(), datatype_of<T>(), op),
                      "rdmx_allreduce");
    }
    /** rdmx_allreduce of one value; returns the result. */
    template <Reducible T>
    T allreduce(T value, rdmx_op_t op) const {
        T out{};
        detail::check(rdmx_allreduce(ctx_, &value, &out, 1, datatype_of<T>(), op), "rdmx_allreduce");
        return out;
    }
    /** rdmx_allgather: every rank's `in` (same size everywhere) into `out`,
     *  which holds size() times as many bytes, rank i's at i * in.size_bytes(). */
    template <class T, std::size_t N, class U, std::size_t M>
        requires std::is_trivially_copyable_v<T> && detail::writable_v<U>
    void allgather(std::span<T, N> in, std::span<U, M> out) const {
        gathered_size(in.size_bytes(), out.size_bytes(), "rdmx::CommRef::allgather (out must hold size() * in bytes)");
        detail::check(rdmx_allgather(ctx_, in.data(), in.size_bytes(), out.data()), "rdmx_allgather");
    }

    /** rdmx_scan: rank r's `out` gets op over ranks 0..r of `in` (same size, no overlap). */
    template <Reducible T, std::size_t N, std::size_t M>
    void scan(std::span<const T, N> in, std::span<T, M> out, rdmx_op_t op) const {
        same_count(in.size(), out.size(), "rdmx::CommRef::scan (sizes differ)");
        detail::check(rdmx_scan(ctx_, in.data(), out.data(), in.size(), datatype_of<T>(), op), "rdmx_scan");
    }
    /** In-place rdmx_scan (RDMX_IN_PLACE) over `inout`. */
    template <Reducible T, std::size_t N>
    void scan(std::span<T, N> inout, rdmx_op_t op) const {
        detail::check(rdmx_scan(ctx_, RDMX_IN_PLACE, inout.data(), inout.size(), datatype_of<T>(), op), "rdmx_scan");
    }
    /** rdmx_scan of one value; returns op over ranks 0..rank(). */
    template <Reducible T>
    T scan(T value, rdmx_op_t op) const {
        T out{};
        detail::check(rdmx_scan(ctx_, &value, &out, 1, datatype_of<T>(), op), "rdmx_scan");
        return out;
    }
    /** rdmx_exscan: rank r's `out` gets op over ranks 0..r-1 of `in`; rank
     *  0's `out` is left untouched. */
    template <Reducible T, std::size_t N, std::size_t M>
    void exscan(std::span<const T, N> in, std::span<T, M> out, rdmx_op_t op) const {
        same_count(in.size(), out.size(), "rdmx::CommRef::exscan (sizes differ)");
        detail::check(rdmx_exscan(ctx_, in.data(), out.data(), in.size(), datatype_of<T>(), op), "rdmx_exscan");
    }
    /** rdmx_exscan of one value: op over ranks 0..rank()-1, or `init` on rank
     *  0 (T{} unless given: 0 for RDMX_SUM, e.g. the offset of a partition). */
    template <Reducible T>
    T exscan(T value, rdmx_op_t op, T init = T{}) const {
        detail::check(rdmx_exscan(ctx_, &value, &init, 1, datatype_of<T>(), op), "rdmx_exscan");
        return init;
    }

    /** rdmx_allgatherv: every rank's `in` into `out`, rank i's lens[i] bytes at
     *  byte displs[i]; lens and displs have size() entries and lens[rank()]
     *  is in.size_bytes(). */
    template <class T, std::size_t N, class U, std::size_t M>
        requires std::is_trivially_copyable_v<T> && detail::writable_v<U>
    void allgatherv(std::span<T, N> in, std::span<U, M> out, std::span<const std::size_t> lens,
                    std::span<const std::size_t> displs) const {
        detail::check_layout(lens, displs, size(), out.size_bytes(), "rdmx::CommRef::allgatherv (lens/displs)");
        detail::check(rdmx_allgatherv(ctx_, in.data(), in.size_bytes(), out.data(), lens.data(), displs.data()),
                      "rdmx_allgatherv");
    }
    /** rdmx_gatherv: as allgatherv, into root's `out` only (lens, displs and
     *  `out` are read on root alone and may be empty elsewhere). */
    template <class T, std::size_t N, class U, std::size_t M>
        requires std::is_trivially_copyable_v<T> && detail::writable_v<U>
    void gatherv(std::span<T, N> in, std::span<U, M> out, std::span<const std::size_t> lens,
                 std::span<const std::size_t> displs, int root) const {
        if (rank() == root)
            detail::check_layout(lens, displs, size(), out.size_bytes(), "rdmx::CommRef::gatherv (lens/displs)");
        detail::check(rdmx_gatherv(ctx_, in.data(), in.size_bytes(), out.data(), lens.data(), displs.data(), root),
                      "rdmx_gatherv");
    }
    /** rdmx_scatterv: root's `in` bytes [displs[i], displs[i] + lens[i]) to
     *  rank i's `out` (out.size_bytes() == lens[i]); `in`, lens and displs are
     *  read on root alone and may be empty elsewhere. */
    template <class T, std::size_t N, class U, std::size_t M>
        requires std::is_trivially_copyable_v<T> && detail::writable_v<U>
    void scatterv(std::span<T, N> in, std::span<const std::size_t> lens, std::span<const std::size_t> displs,
                  std::span<U, M> out, int root) const {
        if (rank() == root)
            detail::check_layout(lens, displs, size(), in.size_bytes(), "rdmx::CommRef::scatterv (lens/displs)");
        detail::check(rdmx_scatterv(ctx_, in.data(), lens.data(), displs.data(), out.data(), out.size_bytes(), root),
                      "rdmx_scatterv");
    }
    /** rdmx_alltoallv: sendlens[i] bytes at `in` + sdispls[i] to rank i, which
     *  receives them as recvlens[rank()] bytes at its `out` + rdispls[rank()]. */
    template <class T, std::size_t N, class U, std::size_t M>
        requires std::is_trivially_copyable_v<T> && detail::writable_v<U>
    void alltoallv(std::span<T, N> in, std::span<const std::size_t> sendlens, std::span<const std::size_t> sdispls,
                   std::span<U, M> out, std::span<const std::size_t> recvlens,
                   std::span<const std::size_t> rdispls) const {
        detail::check_layout(sendlens, sdispls, size(), in.size_bytes(), "rdmx::CommRef::alltoallv (send layout)");
        detail::check_layout(recvlens, rdispls, size(), out.size_bytes(), "rdmx::CommRef::alltoallv (recv layout)");
        detail::check(rdmx_alltoallv(ctx_, in.data(), sendlens.data(), sdispls.data(), out.data(), recvlens.data(),
                                     rdispls.data()),
                      "rdmx_alltoallv");
    }

    /** rdmx_ibarrier: a barrier completed by the returned Request. The
     *  nonblocking collectives below take the blocking ones' arguments;
     *  their buffers must stay valid and untouched until the Request
     *  completes, and every member starts them in the same order. */
    [[nodiscard]] Request ibarrier() const {
        rdmx_request_h h = nullptr;
        detail::check(rdmx_ibarrier(ctx_, &h), "rdmx_ibarrier");
        return Request(h);
    }
    /** rdmx_ibcast of the bytes of `buf` from `root`. */
    template <class T, std::size_t N>
        requires detail::writable_v<T>
    [[nodiscard]] Request ibcast(std::span<T, N> buf, int root) const {
        rdmx_request_h h = nullptr;
        detail::check(rdmx_ibcast(ctx_, buf.data(), buf.size_bytes(), root, &h), "rdmx_ibcast");
        return Request(h);
    }
    /** rdmx_ireduce of in.size() elements into root's `out` (same size on
     *  root; may be empty elsewhere). */
    template <Reducible T, std::size_t N, std::size_t M>
    [[nodiscard]] Request ireduce(std::span<const T, N> in, std::span<T, M> out, rdmx_op_t op, int root) const {
        if (rank() == root) same_count(in.size(), out.size(), "rdmx::CommRef::ireduce (sizes differ)");
        rdmx_request_h h = nullptr;
        detail::check(rdmx_ireduce(ctx_, in.data(), out.data(), in.size(), datatype_of<T>(), op, root, &h),
                      "rdmx_ireduce");
        return Request(h);
    }
    /** rdmx_iallreduce of in.size() elements into `out` (same size, no overlap). */
    template <Reducible T, std::size_t N, std::size_t M>
    [[nodiscard]] Request iallreduce(std::span<const T, N> in, std::span<T, M> out, rdmx_op_t op) const {
        same_count(in.size(), out.size(), "rdmx::CommRef::iallreduce (sizes differ)");
        rdmx_request_h h = nullptr;
        detail::check(rdmx_iallreduce(ctx_, in.data(), out.data(), in.size(), datatype_of<T>(), op, &h),
                      "rdmx_iallreduce");
        return Request(h);
    }
    /** In-place rdmx_iallreduce (RDMX_IN_PLACE) over `inout`. */
    template <Reducible T, std::size_t N>
    [[nodiscard]] Request iallreduce(std::span<T, N> inout, rdmx_op_t op) const {
        rdmx_request_h h = nullptr;
        detail::check(rdmx_iallreduce(ctx_, RDMX_IN_PLACE, inout.data(), inout.size(), datatype_of<T>(), op, &h),
                      "rdmx_iallreduce");
        return Request(h);
    }
    /** rdmx_iallgather: as allgather, completed by the returned Request. */
    template <class T, std::size_t N, class U, std::size_t M>
        requires std::is_trivially_copyable_v<T> && detail::writable_v<U>
    [[nodiscard]] Request iallgather(std::span<T, N> in, std::span<U, M> out) const {
        gathered_size(in.size_bytes(), out.size_bytes(), "rdmx::CommRef::iallgather (out must hold size() * in bytes)");
        rdmx_request_h h = nullptr;
        detail::check(rdmx_iallgather(ctx_, in.data(), in.size_bytes(), out.data(), &h), "rdmx_iallgather");
        return Request(h);
    }
    /** rdmx_ialltoall: `in` and `out` hold size() blocks of equal size; block
     *  i of `in` goes to rank i, block j of `out` comes from rank j. */
    template <class T, std::size_t N, class U, std::size_t M>
        requires std::is_trivially_copyable_v<T> && detail::writable_v<U>
    [[nodiscard]] Request ialltoall(std::span<T, N> in, std::span<U, M> out) const {
        const int n = size();
        if (n <= 0 || in.size_bytes() != out.size_bytes() || in.size_bytes() % static_cast<std::size_t>(n) != 0)
            throw Error(RDMX_ERR_INVALID_ARG, "rdmx::CommRef::ialltoall (in and out: size() equal blocks each)");
        rdmx_request_h h = nullptr;
        detail::check(rdmx_ialltoall(ctx_, in.data(), in.size_bytes() / static_cast<std::size_t>(n), out.data(), &h),
                      "rdmx_ialltoall");
        return Request(h);
    }
    /** rdmx_ialltoallv: as alltoallv, completed by the returned Request (the
     *  four arrays too must stay valid until then). */
    template <class T, std::size_t N, class U, std::size_t M>
        requires std::is_trivially_copyable_v<T> && detail::writable_v<U>
    [[nodiscard]] Request ialltoallv(std::span<T, N> in, std::span<const std::size_t> sendlens,
                                     std::span<const std::size_t> sdispls, std::span<U, M> out,
                                     std::span<const std::size_t> recvlens,
                                     std::span<const std::size_t> rdispls) const {
        detail::check_layout(sendlens, sdispls, size(), in.size_bytes(), "rdmx::CommRef::ialltoallv (send layout)");
        detail::check_layout(recvlens, rdispls, size(), out.size_bytes(), "rdmx::CommRef::ialltoallv (recv layout)");
        rdmx_request_h h = nullptr;
        detail::check(rdmx_ialltoallv(ctx_, in.data(), sendlens.data(), sdispls.data(), out.data(), recvlens.data(),
                                      rdispls.data(), &h),
                      "rdmx_ialltoallv");
        return Request(h);
    }

protected:
    rdmx_context_h ctx_ = nullptr;

private:
    static void same_count(std::size_t a, std::size_t b, const char *where) {
        if (a != b) throw Error(RDMX_ERR_INVALID_ARG, where);
    }
    void gathered_size(std::size_t in_bytes, std::size_t out_bytes, const char *where) const {
        const int n = size();
        if (n < 0 || out_bytes != in_bytes * static_cast<std::size_t>(n)) throw Error(RDMX_ERR_INVALID_ARG, where);
    }
    void send_raw(const void *p, std::size_t n, int dest, int tag) const {
        detail::check(rdmx_send(ctx_, p, n, dest, tag), "rdmx_send");
    }
    rdmx_msg_info_t recv_raw(void *p, std::size_t n, int source, int tag) const {
        rdmx_msg_info_t info{source, tag, 0, RDMX_OK};
        detail::check(rdmx_recv(ctx_, p, n, source, tag, &info), "rdmx_recv", info);
        return info;
    }
    Request isend_raw(const void *p, std::size_t n, int dest, int tag) const {
        rdmx_request_h h = nullptr;
        detail::check(rdmx_isend(ctx_, p, n, dest, tag, &h), "rdmx_isend");
        return Request(h);
    }
    Request irecv_raw(void *p, std::size_t n, int source, int tag) const {
        rdmx_request_h h = nullptr;
        detail::check(rdmx_irecv(ctx_, p, n, source, tag, &h), "rdmx_irecv");
        return Request(h);
    }
};

/**
 * Owns one rdmx_context_h: the constructor calls rdmx_init (collective over
 * the job) and throws rdmx::Error if it fails; the destructor calls
 * rdmx_finalize. Movable, not copyable; a moved-from Context is empty and
 * must not be used except to be destroyed or assigned to. Every call of
 * CommRef works on it (the job's ranks).
 */
class Context : public CommRef {
public:
    /** Defaults plus the RDMX_* environment (rdmx_init with cfg NULL). */
    Context() : Context(nullptr) {}
    /** Start from rdmx_config_init(&cfg), then set fields (see rdmx.h). */
    explicit Context(const rdmx_config_t &cfg) : Context(&cfg) {}
    Context(const Context &) = delete;
    Context &operator=(const Context &) = delete;
    Context(Context &&o) noexcept : CommRef(std::exchange(o.ctx_, nullptr)) {}
    Context &operator=(Context &&o) noexcept {
        if (this != &o) {
            if (ctx_ != nullptr) (void)rdmx_finalize(ctx_);
            ctx_ = std::exchange(o.ctx_, nullptr);
        }
        return *this;
    }
    ~Context() {
        if (ctx_ != nullptr) (void)rdmx_finalize(ctx_);
    }

    /** A config filled by rdmx_config_init, to modify and pass to the constructor. */
    static rdmx_config_t default_config() noexcept {
        rdmx_config_t cfg;
        rdmx_config_init(&cfg);
        return cfg;
    }

    /** rdmx_finalize now, reporting its status (the destructor cannot);
     *  the Context is empty afterwards, even when this throws. */
    void finalize() {
        if (ctx_ != nullptr) detail::check(rdmx_finalize(std::exchange(ctx_, nullptr)), "rdmx_finalize");
    }

private:
    explicit Context(const rdmx_config_t *cfg) { detail::check(rdmx_init(cfg, &ctx_), "rdmx_init"); }
};

/**
 * Owns one derived communicator (from CommRef::split or CommRef::dup): the
 * destructor calls rdmx_comm_free. Movable, not copyable; empty when
 * default-constructed, moved from, freed, or split with RDMX_UNDEFINED.
 * Every call of CommRef works on it, with ranks numbered within it. Free or
 * destroy it before the Context is finalized (finalize frees every
 * communicator of the job, after which this handle is no longer valid).
 */
class Communicator : public CommRef {
public:
    Communicator() noexcept = default;
    /** Take over a handle from rdmx_comm_split/rdmx_comm_dup (may be NULL). */
    explicit Communicator(rdmx_context_h h) noexcept : CommRef(h) {}
    Communicator(const Communicator &) = delete;
    Communicator &operator=(const Communicator &) = delete;
    Communicator(Communicator &&o) noexcept : CommRef(std::exchange(o.ctx_, nullptr)) {}
    Communicator &operator=(Communicator &&o) noexcept {
        if (this != &o) {
            drop();
            ctx_ = std::exchange(o.ctx_, nullptr);
        }
        return *this;
    }
    ~Communicator() { drop(); }

    /** rdmx_comm_free now, reporting its status (the destructor cannot); the
     *  Communicator is empty afterwards, even when this throws. */
    void free() {
        if (ctx_ != nullptr) {
            rdmx_context_h h = std::exchange(ctx_, nullptr);
            detail::check(rdmx_comm_free(&h), "rdmx_comm_free");
        }
    }
    /** Give up ownership: the caller must free the handle with rdmx_comm_free. */
    rdmx_context_h release() noexcept { return std::exchange(ctx_, nullptr); }

private:
    void drop() noexcept {
        if (ctx_ != nullptr) (void)rdmx_comm_free(&ctx_);
    }
};

inline Communicator CommRef::split(int color, int key) const {
    rdmx_context_h h = nullptr;
    detail::check(rdmx_comm_split(ctx_, color, key, &h), "rdmx_comm_split");
    return Communicator(h);
}

inline Communicator CommRef::dup() const {
    rdmx_context_h h = nullptr;
    detail::check(rdmx_comm_dup(ctx_, &h), "rdmx_comm_dup");
    return Communicator(h);
}

}  // namespace rdmx

#endif /* RDMX_RDMX_HPP */
