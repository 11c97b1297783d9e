// Nonblocking collectives as schedules (the libNBC design): a schedule is a
// list of rounds; a round posts a set of nonblocking sends and receives and,
// once all of them completed, runs its local steps (copies, reductions) in
// order. The application holds a generalized request that the schedule
// completes after its last round. Schedules advance from one progress
// callback (on the progress thread, or inside the application's rdmx calls)
// and once right after the call that starts them. Built on the public API.
#ifndef RDMX_COLLECTIVES_COLL_NBC_H
#define RDMX_COLLECTIVES_COLL_NBC_H

#include "coll_internal.h"
#include "coll_reduce_ops.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace rdmx::coll::nbc {

/**
 * Tags of nonblocking collectives: bit 30 (never set by the blocking kinds,
 * kind << 24 with kind < 64), the schedule's sequence number on its context
 * (10 bits: 1,024 schedules may be outstanding on one context) and the step.
 */
inline constexpr int kTagBit = 1 << 30;
inline constexpr uint32_t kSeqMask = 0x3FF;
inline constexpr int kSeqShift = 20;
inline constexpr int kStepMask = 0xFFFFF;
inline int tag_of(uint32_t seq, int step) noexcept {
    return kTagBit | static_cast<int>((seq & kSeqMask) << kSeqShift) | (step & kStepMask);
}

class Schedule {
public:
    /** skip_empty: zero-length sends/receives are not posted (both ends
     *  compute the same length); the barrier keeps them (its tokens). */
    Schedule(const Comm &c, const char *fn, bool skip_empty = true) : c_(c), fn_(fn), skip_empty_(skip_empty) {}
    Schedule(const Schedule &) = delete;
    Schedule &operator=(const Schedule &) = delete;

    // ---- building (before start) -------------------------------------------
    void send(const void *buf, size_t len, int dest, int step);
    void recv(void *buf, size_t len, int source, int step);
    /** Local steps, run in order after the round's requests completed. */
    void copy(void *dst, const void *src, size_t len);
    void reduce(void *acc, const void *in, size_t count, bool in_left);
    /** Close the current round (an empty round is dropped). */
    void end_round();
    /** Scratch owned by the schedule, freed with it. */
    std::byte *scratch(size_t n);
    void set_reduce(const ReduceSpec &rs) noexcept { rs_ = rs; }
    const Comm &comm() const noexcept { return c_; }

    // ---- running (under the engine's mutex) ------------------------------------
    void bind(rdmx_request_h greq, uint32_t seq) noexcept {
        greq_ = greq;
        seq_ = seq;
    }
    /** Post, test and run local steps as far as possible; true when the
     *  schedule finished and its request was completed. `events` counts
     *  completed requests and rounds. */
    bool advance(int &events) noexcept;
    /** Complete the request now with `st` (the context is being freed); the
     *  requests in flight are cancelled where they can be, and advance()
     *  then only drains them. */
    void abandon(rdmx_status_t st) noexcept;
    /** No request of this schedule is in flight. */
    bool drained() const noexcept;

private:
    enum class Type : uint8_t { Send, Recv, Copy, Reduce };
    struct Op {
        Type type;
        bool in_left;      // Reduce: the incoming operand on the left
        int peer;          // Send/Recv
        int step;          // Send/Recv: the tag's step
        const void *src;   // Send: data; Copy: source; Reduce: incoming operand
        void *dst;         // Recv: buffer; Copy: destination; Reduce: accumulator
        size_t len;        // bytes; Reduce: elements
    };
    static constexpr size_t kSend = SIZE_MAX;  // want_ of a send: no length to check

    void post_round() noexcept;
    bool test_round(int &events) noexcept;
    void run_local() noexcept;
    void fail(rdmx_status_t st) noexcept;
    void cancel_receives() noexcept;
    void finish() noexcept;
    size_t round_begin(size_t r) const noexcept { return r == 0 ? 0 : round_end_[r - 1]; }

    Comm c_;
    const char *fn_;  // the entry point, for messages
    bool skip_empty_;
    ReduceSpec rs_{RDMX_UINT8, RDMX_SUM, 1};
    std::vector<Op> ops_;
    std::vector<size_t> round_end_;  // ops_[round_begin(r), round_end_[r]) is round r
    std::vector<std::unique_ptr<std::byte[]>> scratch_;

    rdmx_request_h greq_ = nullptr;
    uint32_t seq_ = 0;
    size_t round_ = 0;
    bool posted_ = false;
    bool canceled_ = false;
    bool finished_ = false;  // the request was completed
    rdmx_status_t err_ = RDMX_OK;
    std::vector<rdmx_request_h> reqs_;
    std::vector<size_t> want_;
};

/**
 * Start `s` for the caller: a generalized request on its context, the next
 * sequence number of that context, a first advance (posts round 0), then the
 * progress callback drives it. *req_p is the application's request; on an
 * error return it is NULL and nothing was sent.
 */
rdmx_status_t start(std::unique_ptr<Schedule> s, rdmx_request_h *req_p);

}  // namespace rdmx::coll::nbc

#endif
