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
 * moves. A Request object is not synchronised: use each one from one thread
 * at a time. Complete or destroy every Request before the Context that
 * created it is finalized.
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

/** Element types the reductions accept: integers of 1, 2, 4 or 8 bytes (not
 *  bool), float and double. */
template <class T>
concept Reducible = (std::is_integral_v<T> && !std::is_same_v<T, bool> &&
                     (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8)) ||
                    std::is_same_v<T, float> || std::is_same_v<T, double>;

/** The rdmx_datatype_t of a Reducible type, e.g. datatype_of<double>() == RDMX_DOUBLE. */
template <Reducible T>
constexpr rdmx_datatype_t datatype_of() noexcept {
    if constexpr (std::is_same_v<T, float>) {
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

/**
 * Owns one rdmx_context_h: the constructor calls rdmx_init (collective over
 * the job) and throws rdmx::Error if it fails; the destructor calls
 * rdmx_finalize. Movable, not copyable; a moved-from Context is empty and
 * must not be used except to be destroyed or assigned to.
 */
class Context {
public:
    /** Defaults plus the RDMX_* environment (rdmx_init with cfg NULL). */
    Context() : Context(nullptr) {}
    /** Start from rdmx_config_init(&cfg), then set fields (see rdmx.h). */
    explicit Context(const rdmx_config_t &cfg) : Context(&cfg) {}
    Context(const Context &) = delete;
    Context &operator=(const Context &) = delete;
    Context(Context &&o) noexcept : ctx_(std::exchange(o.ctx_, nullptr)) {}
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

    /** This process's rank, 0..size()-1 (-1 if empty). */
    int rank() const noexcept { return rdmx_rank(ctx_); }
    /** Number of processes in the job (-1 if empty). */
    int size() const noexcept { return rdmx_size(ctx_); }
    /** The C handle (still owned by this object), for calls this layer lacks. */
    rdmx_context_h native_handle() const noexcept { return ctx_; }
    explicit operator bool() const noexcept { return ctx_ != nullptr; }

    /** Blocking send (rdmx_send): returns when `buf` may be reused. */
    void send(std::span<const std::byte> buf, int dest, int tag) { send_raw(buf.data(), buf.size(), dest, tag); }
    /** Blocking send of the bytes of a span of trivially copyable T. */
    template <class T, std::size_t N>
        requires std::is_trivially_copyable_v<T>
    void send(std::span<T, N> buf, int dest, int tag) {
        send_raw(buf.data(), buf.size_bytes(), dest, tag);
    }

    /** Blocking receive (rdmx_recv) into `buf` from `source` (or
     *  RDMX_ANY_SOURCE) with `tag` (or RDMX_ANY_TAG). A longer message throws
     *  rdmx::Error with RDMX_ERR_TRUNCATE after filling `buf` (use irecv and
     *  Request::wait to treat truncation as a value). */
    rdmx_msg_info_t recv(std::span<std::byte> buf, int source = RDMX_ANY_SOURCE, int tag = RDMX_ANY_TAG) {
        return recv_raw(buf.data(), buf.size(), source, tag);
    }
    /** Blocking receive into a span of trivially copyable, non-const T. */
    template <class T, std::size_t N>
        requires detail::writable_v<T>
    rdmx_msg_info_t recv(std::span<T, N> buf, int source = RDMX_ANY_SOURCE, int tag = RDMX_ANY_TAG) {
        return recv_raw(buf.data(), buf.size_bytes(), source, tag);
    }

    /** Nonblocking send (rdmx_isend); `buf` must stay valid and unchanged
     *  until the Request completes. */
    [[nodiscard]] Request isend(std::span<const std::byte> buf, int dest, int tag) {
        return isend_raw(buf.data(), buf.size(), dest, tag);
    }
    /** Nonblocking send of a span of trivially copyable T. */
    template <class T, std::size_t N>
        requires std::is_trivially_copyable_v<T>
    [[nodiscard]] Request isend(std::span<T, N> buf, int dest, int tag) {
        return isend_raw(buf.data(), buf.size_bytes(), dest, tag);
    }
    /** Nonblocking receive (rdmx_irecv); `buf` must stay valid until the
     *  Request completes. Truncation shows in the Request's status. */
    [[nodiscard]] Request irecv(std::span<std::byte> buf, int source = RDMX_ANY_SOURCE, int tag = RDMX_ANY_TAG) {
        return irecv_raw(buf.data(), buf.size(), source, tag);
    }
    /** Nonblocking receive into a span of trivially copyable, non-const T. */
    template <class T, std::size_t N>
        requires detail::writable_v<T>
    [[nodiscard]] Request irecv(std::span<T, N> buf, int source = RDMX_ANY_SOURCE, int tag = RDMX_ANY_TAG) {
        return irecv_raw(buf.data(), buf.size_bytes(), source, tag);
    }

    /** Block until a matching message is available (rdmx_probe) and describe it. */
    rdmx_msg_info_t probe(int source = RDMX_ANY_SOURCE, int tag = RDMX_ANY_TAG) {
        rdmx_msg_info_t info{};
        detail::check(rdmx_probe(ctx_, source, tag, &info), "rdmx_probe");
        return info;
    }
    /** Describe a matching message if one is available now (rdmx_iprobe). */
    std::optional<rdmx_msg_info_t> iprobe(int source = RDMX_ANY_SOURCE, int tag = RDMX_ANY_TAG) {
        rdmx_msg_info_t info{};
        int found = 0;
        detail::check(rdmx_iprobe(ctx_, source, tag, &found, &info), "rdmx_iprobe");
        if (found == 0) return std::nullopt;
        return info;
    }
    /** Drive progress once (rdmx_progress); returns the number of events handled. */
    int progress() noexcept { return rdmx_progress(ctx_); }

    /** rdmx_barrier. */
    void barrier() { detail::check(rdmx_barrier(ctx_), "rdmx_barrier"); }
    /** rdmx_bcast of the bytes of `buf` from `root`. */
    template <class T, std::size_t N>
        requires detail::writable_v<T>
    void bcast(std::span<T, N> buf, int root) {
        detail::check(rdmx_bcast(ctx_, buf.data(), buf.size_bytes(), root), "rdmx_bcast");
    }
    /** rdmx_allreduce of in.size() elements into `out` (same size, no overlap). */
    template <Reducible T, std::size_t N, std::size_t M>
    void allreduce(std::span<const T, N> in, std::span<T, M> out, rdmx_op_t op) {
        if (in.size() != out.size()) throw Error(RDMX_ERR_INVALID_ARG, "rdmx::Context::allreduce (sizes differ)");
        detail::check(rdmx_allreduce(ctx_, in.data(), out.data(), in.size(), datatype_of<T>(), op), "rdmx_allreduce");
    }
    /** In-place rdmx_allreduce (RDMX_IN_PLACE) over `inout`. */
    template <Reducible T, std::size_t N>
    void allreduce(std::span<T, N> inout, rdmx_op_t op) {
        detail::check(rdmx_allreduce(ctx_, RDMX_IN_PLACE, inout.data(), inout.size(), datatype_of<T>(), op),
                      "rdmx_allreduce");
    }
    /** rdmx_allreduce of one value; returns the result. */
    template <Reducible T>
    T allreduce(T value, rdmx_op_t op) {
        T out{};
        detail::check(rdmx_allreduce(ctx_, &value, &out, 1, datatype_of<T>(), op), "rdmx_allreduce");
        return out;
    }
    /** rdmx_allgather: every rank's `in` (same size everywhere) into `out`,
     *  which holds size() times as many bytes, rank i's at i * in.size_bytes(). */
    template <class T, std::size_t N, class U, std::size_t M>
        requires std::is_trivially_copyable_v<T> && detail::writable_v<U>
    void allgather(std::span<T, N> in, std::span<U, M> out) {
        if (out.size_bytes() != in.size_bytes() * static_cast<std::size_t>(size()))
            throw Error(RDMX_ERR_INVALID_ARG, "rdmx::Context::allgather (out must hold size() * in bytes)");
        detail::check(rdmx_allgather(ctx_, in.data(), in.size_bytes(), out.data()), "rdmx_allgather");
    }

private:
    explicit Context(const rdmx_config_t *cfg) { detail::check(rdmx_init(cfg, &ctx_), "rdmx_init"); }
    void send_raw(const void *p, std::size_t n, int dest, int tag) {
        detail::check(rdmx_send(ctx_, p, n, dest, tag), "rdmx_send");
    }
    rdmx_msg_info_t recv_raw(void *p, std::size_t n, int source, int tag) {
        rdmx_msg_info_t info{source, tag, 0, RDMX_OK};
        detail::check(rdmx_recv(ctx_, p, n, source, tag, &info), "rdmx_recv", info);
        return info;
    }
    Request isend_raw(const void *p, std::size_t n, int dest, int tag) {
        rdmx_request_h h = nullptr;
        detail::check(rdmx_isend(ctx_, p, n, dest, tag, &h), "rdmx_isend");
        return Request(h);
    }
    Request irecv_raw(void *p, std::size_t n, int source, int tag) {
        rdmx_request_h h = nullptr;
        detail::check(rdmx_irecv(ctx_, p, n, source, tag, &h), "rdmx_irecv");
        return Request(h);
    }
    rdmx_context_h ctx_ = nullptr;
};

}  // namespace rdmx

#endif /* RDMX_RDMX_HPP */
