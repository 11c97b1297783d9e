// Soak: every rank sends random traffic to every rank (itself included) for a
// fixed time, receives it through a random mix of exact and wildcard
// receives, completes requests in random order, and checks every message.
//
//   soak_test [--seconds S] [--seed N] [--max-size BYTES] [--messages N] [--grace S]
//   environment: RDMX_SOAK_SECONDS (60), RDMX_SOAK_SEED, RDMX_SOAK_MAX_SIZE
//   (16 MiB), RDMX_SOAK_GRACE (180); options win over the environment.
//
// Messages. Sender s's k-th message to d with tag t has a length and bytes
// that are functions of (seed, s, d, t, k), so the receiver can check both.
// Lengths are skewed to small ones (a few per cent reach the MiB range) so
// that enough messages flow under emulation, and straddle the eager limit.
// A message of 16 bytes or more starts with {s, t, k}.
//
// Checks, on the receiving side:
//  - length, source, tag and every byte of every message; nothing written
//    past a receive buffer;
//  - per (sender, tag), taken in the order the receives were POSTED (not the
//    order they complete), k runs 0, 1, 2, ...: two messages with one sender
//    and one tag match exactly the same receives, so non-overtaking fixes
//    their order, and a gap or a repeat is a lost or duplicated message;
//  - at the end each sender announces, per destination, the tags of what it
//    sent in order: the counts must match exactly, and a receive with
//    RDMX_ANY_TAG must not have taken a sender's message while an earlier one
//    of that sender (any tag, so it matched too) went to a later receive.
// Messages from different senders are not ordered; nothing checks that.
//
// Liveness. Blocking completion calls (rdmx_wait, rdmx_waitall, rdmx_recv,
// rdmx_waitany) are only given requests that must finish on their own: eager
// sends, and receives posted for a message rdmx_iprobe has already seen
// (rdmx_waitany may hold others as long as one such is among them). One
// fully wildcard receive is always kept posted, and exact receives that wait
// long are cancelled, so no rank starves.
//
// Termination. After its time (or message count) a rank stops sending and
// announces its per-destination logs (tag space RDMX_TAGSPACE_LIB, which no
// user receive can match); it keeps receiving until it holds every announced
// message and its own sends are complete, cancels its leftover receives, and
// meets the others in a final exchange. A watchdog ends the process with the
// seed and the state it got stuck in when the time plus a grace has passed.
//
// The seed fixes every rank's message sequence and choices; arrival timing
// still varies between runs, --messages N makes the set of messages exact.
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "harness.h"

namespace {

constexpr int kTags = 6;          // few tags: wildcard and exact receives collide often
constexpr size_t kMaxSends = 8;   // outstanding sends per rank
constexpr size_t kMaxRecvs = 8;   // outstanding receives per rank
constexpr size_t kGuard = 64;     // bytes after each receive buffer that must stay intact
constexpr uint8_t kGuardByte = 0xA5;
constexpr int kCtlSeed = 1, kCtlCount = 2, kCtlLog = 3, kCtlDone = 4;  // RDMX_TAGSPACE_LIB tags
constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;

struct Opts {
    double seconds = 60;
    uint64_t seed = 0;
    bool seed_given = false;
    size_t max_size = 16u << 20;
    uint64_t messages = 0;  // 0: run for `seconds`
    double grace = 180;
};

rdmx_context_h ctx;
int me, np;
Opts opt;
size_t safe_eager = 1024;  // sends this small complete at once (well below any eager limit)
size_t eager_limit = 8192;
char test_name[96] = "soak";

// ---- deterministic messages -------------------------------------------------

uint64_t mix64(uint64_t x) {
    x += kGolden;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

struct Rng {
    uint64_t s;
    uint64_t next() { return mix64(s += kGolden); }
    uint64_t below(uint64_t n) { return next() % n; }
    bool chance(unsigned percent) { return below(100) < percent; }
};

uint64_t msg_key(int src, int dst, int tag, uint64_t k) {
    uint64_t who = (static_cast<uint64_t>(src) << 40) | (static_cast<uint64_t>(dst) << 16) | static_cast<uint64_t>(tag);
    return mix64(opt.seed ^ mix64(who) ^ (k * kGolden));
}

size_t log_uniform(uint64_t r, size_t lo, size_t hi) {
    double f = static_cast<double>(r >> 11) / 9007199254740992.0;  // [0, 1)
    return static_cast<size_t>(static_cast<double>(lo) * std::exp2(f * std::log2(static_cast<double>(hi) / lo)));
}

size_t msg_len(uint64_t key) {
    uint64_t r = mix64(key ^ 0x5ca1ab1e5ca1ab1eull);
    uint64_t band = r % 100, u = r >> 7;
    size_t len;
    if (band < 3) len = 0;
    else if (band < 50) len = 1 + u % 256;
    else if (band < 80) len = 257 + u % (2 * 8192 - 257);  // both sides of the default eager limit
    else if (band < 96) len = log_uniform(u, 16 << 10, 1 << 20);
    else len = log_uniform(u, 1 << 20, (16 << 20) + 1);
    return std::min(len, opt.max_size);
}

// Word w of a message: the first two words of one of 16 bytes or more are
// {src | tag << 32, k}; the rest come from the key.
uint64_t msg_word(uint64_t key, size_t len, size_t w, int src, int tag, uint64_t k) {
    if (len >= 16 && w == 0) return static_cast<uint32_t>(src) | (static_cast<uint64_t>(tag) << 32);
    if (len >= 16 && w == 1) return k;
    return mix64(key + (w + 1) * kGolden);
}

void fill(uint8_t *b, size_t len, int src, int dst, int tag, uint64_t k) {
    const uint64_t key = msg_key(src, dst, tag, k);
    for (size_t w = 0; w * 8 < len; ++w) {
        uint64_t v = msg_word(key, len, w, src, tag, k);
        std::memcpy(b + w * 8, &v, std::min<size_t>(8, len - w * 8));
    }
}

// Index of the first byte that differs from message (src -> me, tag, k), or SIZE_MAX.
size_t first_bad(const uint8_t *b, size_t len, int src, int dst, int tag, uint64_t k) {
    const uint64_t key = msg_key(src, dst, tag, k);
    for (size_t w = 0; w * 8 < len; ++w) {
        uint64_t v = msg_word(key, len, w, src, tag, k);
        size_t n = std::min<size_t>(8, len - w * 8);
        if (std::memcmp(b + w * 8, &v, n) != 0)
            for (size_t i = 0; i < n; ++i)
                if (b[w * 8 + i] != reinterpret_cast<const uint8_t *>(&v)[i]) return w * 8 + i;
    }
    return SIZE_MAX;
}

// ---- state ------------------------------------------------------------------

// One posted receive, kept in post order for the ordering checks.
struct Rec {
    int src_pat, tag_pat;
    int src = -1, tag = -1;
    size_t len = 0;
    uint64_t k = UINT64_MAX;
    uint8_t small[16] = {};  // a message under 16 bytes carries no k: checked when retired
    bool done = false, got = false;
};

enum class Kind { kSend, kBlind, kInformed };

struct Op {
    rdmx_request_h req = nullptr;
    Kind kind;
    bool safe = false;        // completes without any further action of this rank's peers
    bool canceled = false;    // rdmx_cancel called
    size_t rec = 0;           // receives: index in recs
    size_t len = 0;           // sends: message length; informed receives: probed length
    int dest = -1, tag = -1;  // sends
    uint64_t k = 0;           // sends
    uint64_t step = 0;        // when posted
    std::unique_ptr<uint8_t[]> buf;
};

struct Stats {
    uint64_t sent = 0, sent_bytes = 0, sent_large = 0, sent_blocking = 0;
    uint64_t recvd = 0, recvd_bytes = 0, blind[4] = {}, informed = 0, blocking_recvs = 0;
    uint64_t cancels = 0, cancel_lost_race = 0, tests = 0, waitanys = 0, waitalls = 0, waits = 0;
};

struct State {
    Rng send_rng{0}, act_rng{0};
    uint64_t step = 0;
    bool sending = true;
    std::vector<Op> ops;
    std::vector<Rec> recs;
    size_t retired = 0;
    std::vector<std::vector<uint8_t>> sent_log;      // per destination: tags in send order
    std::vector<std::vector<uint64_t>> send_k;        // [dest][tag] next k
    std::vector<std::vector<uint64_t>> recv_k;        // [src][tag] next k, in post order
    std::vector<uint64_t> recv_from;                  // retired messages per source
    std::vector<std::unique_ptr<uint8_t[]>> pool;     // free wildcard-receive buffers (max_size + guard)
    Stats st;
};

// Watchdog: every wait in this test is bounded by it. Never destroyed, so a
// failing check may exit() while its thread still waits.
struct Watchdog {
    std::atomic<int> phase{0};
    std::atomic<uint64_t> sent{0}, recvd{0}, outstanding{0};
    std::mutex m;
    std::condition_variable cv;
    bool finished = false;
    std::thread th;
};
Watchdog &dog = *new Watchdog;
const char *const kPhase[] = {"start", "seed exchange", "traffic", "drain", "final exchange", "finalize"};

void watchdog_start(double limit_s) {
    dog.th = std::thread([limit_s] {
        std::unique_lock<std::mutex> lk(dog.m);
        auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
        if (dog.cv.wait_until(lk, until, [] { return dog.finished; })) return;
        std::fprintf(stderr,
                     "FAIL rank %d [%s]: still in phase '%s' after %.0f s (sent %" PRIu64 ", received %" PRIu64
                     ", %" PRIu64 " requests outstanding); rerun with --seed %" PRIu64 "\n",
                     me, test_name, kPhase[dog.phase.load()], limit_s, dog.sent.load(), dog.recvd.load(),
                     dog.outstanding.load(), opt.seed);
        std::fflush(stderr);
        std::_Exit(1);
    });
}

void watchdog_stop() {
    {
        std::lock_guard<std::mutex> g(dog.m);
        dog.finished = true;
    }
    dog.cv.notify_all();
    dog.th.join();
}

// ---- receiving ------------------------------------------------------------

bool matches(int pat, int v) { return pat < 0 || pat == v; }

// Post-order bookkeeping: a record is retired once it and every record posted
// before it have completed; only then is its k known to be the next one.
void retire(State &s) {
    while (s.retired < s.recs.size() && s.recs[s.retired].done) {
        Rec &r = s.recs[s.retired];
        if (r.got) {
            uint64_t &want = s.recv_k[static_cast<size_t>(r.src)][static_cast<size_t>(r.tag)];
            if (r.len >= 16) {
                RT_CHECK(r.k == want, "receive #%zu from %d tag %d holds message #%" PRIu64 ", expected #%" PRIu64
                         " (%s)", s.retired, r.src, r.tag, r.k, want,
                         r.k < want ? "duplicated, or overtaken by a later one" : "an earlier one was lost or overtaken");
            } else {
                r.k = want;
                size_t exp_len = msg_len(msg_key(r.src, me, r.tag, want));
                RT_CHECK(r.len == exp_len, "receive #%zu from %d tag %d: length %zu, message #%" PRIu64
                         " has %zu (lost, duplicated or reordered)", s.retired, r.src, r.tag, r.len, want, exp_len);
                size_t bad = first_bad(r.small, r.len, r.src, me, r.tag, want);
                RT_CHECK(bad == SIZE_MAX, "receive #%zu from %d tag %d, message #%" PRIu64 " (%zu B): byte %zu wrong",
                         s.retired, r.src, r.tag, want, r.len, bad);
            }
            ++want;
            ++s.recv_from[static_cast<size_t>(r.src)];
        }
        ++s.retired;
    }
}

// Checks a received message as far as it can be checked before retirement.
void check_message(Rec &r, const Op &op, const uint8_t *b, const rdmx_msg_info_t &info) {
    RT_CHECK(info.source >= 0 && info.source < np && info.tag >= 0 && info.tag < kTags,
             "receive #%zu: source %d tag %d out of range", op.rec, info.source, info.tag);
    RT_CHECK(matches(r.src_pat, info.source) && matches(r.tag_pat, info.tag),
             "receive #%zu posted for (%d, %d) matched a message from %d with tag %d", op.rec, r.src_pat, r.tag_pat,
             info.source, info.tag);
    RT_CHECK(op.kind != Kind::kInformed || info.length == op.len,
             "receive #%zu: rdmx_iprobe reported %zu bytes from %d tag %d, the receive got %zu", op.rec, op.len,
             info.source, info.tag, info.length);
    const size_t cap = op.kind == Kind::kInformed ? op.len : opt.max_size;
    RT_CHECK(info.length <= cap, "receive #%zu: length %zu exceeds the buffer (%zu) without truncation", op.rec,
             info.length, cap);
    for (size_t i = 0; i < kGuard; ++i)
        RT_CHECK(b[cap + i] == kGuardByte, "receive #%zu (%zu bytes from %d): byte %zu past the buffer was written",
                 op.rec, info.length, info.source, i);
    r.src = info.source;
    r.tag = info.tag;
    r.len = info.length;
    if (r.len < 16) {
        std::memcpy(r.small, b, r.len);
        return;
    }
    uint64_t w0, k;
    std::memcpy(&w0, b, 8);
    std::memcpy(&k, b + 8, 8);
    RT_CHECK(w0 == (static_cast<uint32_t>(r.src) | (static_cast<uint64_t>(r.tag) << 32)),
             "receive #%zu (%zu bytes from %d tag %d): header names sender %u tag %u", op.rec, r.len, r.src, r.tag,
             static_cast<uint32_t>(w0), static_cast<uint32_t>(w0 >> 32));
    size_t exp_len = msg_len(msg_key(r.src, me, r.tag, k));
    RT_CHECK(r.len == exp_len, "receive #%zu: message #%" PRIu64 " from %d tag %d has %zu bytes, should have %zu",
             op.rec, k, r.src, r.tag, r.len, exp_len);
    size_t bad = first_bad(b, r.len, r.src, me, r.tag, k);
    RT_CHECK(bad == SIZE_MAX, "receive #%zu: message #%" PRIu64 " from %d tag %d (%zu B): byte %zu wrong", op.rec, k,
             r.src, r.tag, r.len, bad);
    r.k = k;
}

void recv_done(State &s, Op &op, rdmx_status_t st, const rdmx_msg_info_t &info) {
    Rec &r = s.recs[op.rec];
    r.done = true;
    if (st == RDMX_ERR_CANCELED) {
        RT_CHECK(op.canceled, "receive #%zu completed CANCELED without rdmx_cancel", op.rec);
    } else {
        RT_CHECK(st == RDMX_OK, "receive #%zu (posted for %d, %d): %s", op.rec, r.src_pat, r.tag_pat,
                 rdmx_strerror(st));
        check_message(r, op, op.buf.get(), info);
        r.got = true;
        ++s.st.recvd;
        s.st.recvd_bytes += r.len;
        dog.recvd.fetch_add(1, std::memory_order_relaxed);
        if (op.canceled) ++s.st.cancel_lost_race;
    }
    if (op.kind == Kind::kBlind) s.pool.push_back(std::move(op.buf));
    retire(s);
}

void send_done(State &s, Op &op, rdmx_status_t st) {
    RT_CHECK(st == RDMX_OK, "send of message #%" PRIu64 " (%zu B, tag %d) to %d: %s", op.k, op.len, op.tag, op.dest,
             rdmx_strerror(st));
    if (op.len <= (1u << 20)) {  // the library must never write into a send buffer
        size_t bad = first_bad(op.buf.get(), op.len, me, op.dest, op.tag, op.k);
        RT_CHECK(bad == SIZE_MAX, "send buffer of message #%" PRIu64 " to %d changed at byte %zu", op.k, op.dest, bad);
    }
    (void)s;
}

// Completes ops[i] (its request already freed by the library) and removes it.
void finish(State &s, size_t i, rdmx_status_t st, const rdmx_msg_info_t &info) {
    Op &op = s.ops[i];
    op.req = nullptr;
    if (op.kind == Kind::kSend) send_done(s, op, st);
    else recv_done(s, op, st, info);
    s.ops[i] = std::move(s.ops.back());
    s.ops.pop_back();
    dog.outstanding.store(s.ops.size(), std::memory_order_relaxed);
}

std::unique_ptr<uint8_t[]> guarded(size_t cap) {
    std::unique_ptr<uint8_t[]> b(new uint8_t[cap + kGuard]);
    std::memset(b.get() + cap, kGuardByte, kGuard);
    return b;
}

size_t add_rec(State &s, int src_pat, int tag_pat) {
    Rec r;
    r.src_pat = src_pat;
    r.tag_pat = tag_pat;
    s.recs.push_back(r);
    return s.recs.size() - 1;
}

size_t count_recvs(const State &s, bool only_full_wildcard) {
    size_t n = 0;
    for (const Op &op : s.ops)
        if (op.kind != Kind::kSend && (!only_full_wildcard || (op.kind == Kind::kBlind && !op.canceled &&
                                                              s.recs[op.rec].src_pat < 0 && s.recs[op.rec].tag_pat < 0)))
            ++n;
    return n;
}

// A receive for a message rdmx_iprobe has seen: nothing posted earlier
// matches it (it would not be unexpected), so an exact receive gets it.
void post_informed(State &s) {
    int sp = s.act_rng.chance(50) ? RDMX_ANY_SOURCE : static_cast<int>(s.act_rng.below(np));
    int tp = s.act_rng.chance(50) ? RDMX_ANY_TAG : static_cast<int>(s.act_rng.below(kTags));
    int found = 0;
    rdmx_msg_info_t pi{};
    RT_OK(rdmx_iprobe(ctx, sp, tp, &found, &pi));
    if (!found) return;
    RT_CHECK(matches(sp, pi.source) && matches(tp, pi.tag) && pi.tag >= 0 && pi.tag < kTags,
             "rdmx_iprobe(%d, %d) reported a message from %d tag %d", sp, tp, pi.source, pi.tag);
    Op op;
    op.kind = Kind::kInformed;
    op.safe = true;
    op.len = pi.length;
    op.step = s.step;
    op.buf = guarded(pi.length);
    op.rec = add_rec(s, pi.source, pi.tag);
    ++s.st.informed;
    if (s.act_rng.chance(15)) {  // the blocking call, on a message known to be there
        rdmx_msg_info_t info{};
        rdmx_status_t st = rdmx_recv(ctx, op.buf.get(), op.len, pi.source, pi.tag, &info);
        ++s.st.blocking_recvs;
        recv_done(s, op, st, info);
        return;
    }
    RT_OK(rdmx_irecv(ctx, op.buf.get(), op.len, pi.source, pi.tag, &op.req));
    s.ops.push_back(std::move(op));
}

void post_blind(State &s) {
    unsigned kind = count_recvs(s, true) == 0 ? 0 : static_cast<unsigned>(s.act_rng.below(4));
    int sp = (kind & 1) ? static_cast<int>(s.act_rng.below(np)) : RDMX_ANY_SOURCE;
    int tp = (kind & 2) ? static_cast<int>(s.act_rng.below(kTags)) : RDMX_ANY_TAG;
    Op op;
    op.kind = Kind::kBlind;
    op.step = s.step;
    if (s.pool.empty()) s.pool.push_back(guarded(opt.max_size));
    op.buf = std::move(s.pool.back());
    s.pool.pop_back();
    op.rec = add_rec(s, sp, tp);
    ++s.st.blind[kind];
    RT_OK(rdmx_irecv(ctx, op.buf.get(), opt.max_size, sp, tp, &op.req));
    s.ops.push_back(std::move(op));
}

void post_recv(State &s) {
    if (count_recvs(s, false) >= kMaxRecvs) return;
    if (count_recvs(s, true) > 0 && s.act_rng.chance(35)) post_informed(s);
    else post_blind(s);
    dog.outstanding.store(s.ops.size(), std::memory_order_relaxed);
}

// Cancels a blind receive that has waited long; it completes either
// CANCELED or, if a message matched it first, normally.
void cancel_one(State &s) {
    for (Op &op : s.ops) {
        if (op.kind != Kind::kBlind || op.canceled || s.step - op.step < 1000) continue;
        RT_OK(rdmx_cancel(op.req));
        op.canceled = true;
        ++s.st.cancels;
        return;
    }
}

// ---- sending --------------------------------------------------------------

size_t count_sends(const State &s) {
    size_t n = 0;
    for (const Op &op : s.ops) n += op.kind == Kind::kSend;
    return n;
}

void post_send(State &s) {
    if (!s.sending || count_sends(s) >= kMaxSends) return;
    Op op;
    op.kind = Kind::kSend;
    op.dest = static_cast<int>(s.send_rng.below(np));
    op.tag = static_cast<int>(s.send_rng.below(kTags));
    op.k = s.send_k[static_cast<size_t>(op.dest)][static_cast<size_t>(op.tag)]++;
    s.sent_log[static_cast<size_t>(op.dest)].push_back(static_cast<uint8_t>(op.tag));
    op.len = msg_len(msg_key(me, op.dest, op.tag, op.k));
    op.safe = op.len <= safe_eager;
    op.step = s.step;
    op.buf.reset(new uint8_t[op.len > 0 ? op.len : 1]);
    fill(op.buf.get(), op.len, me, op.dest, op.tag, op.k);
    ++s.st.sent;
    s.st.sent_bytes += op.len;
    s.st.sent_large += op.len > eager_limit;
    dog.sent.fetch_add(1, std::memory_order_relaxed);
    const void *p = op.len == 0 && s.send_rng.chance(50) ? nullptr : op.buf.get();
    if (op.safe && s.send_rng.chance(10)) {  // blocking; an eager send returns at once
        ++s.st.sent_blocking;
        send_done(s, op, rdmx_send(ctx, p, op.len, op.dest, op.tag));
    } else {
        RT_OK(rdmx_isend(ctx, p, op.len, op.dest, op.tag, &op.req));
        // A send that completed at post comes back as a NULL handle: done now.
        if (op.req == nullptr) send_done(s, op, RDMX_OK);
        else s.ops.push_back(std::move(op));
    }
    if (opt.messages > 0 && s.st.sent >= opt.messages) s.sending = false;
    dog.outstanding.store(s.ops.size(), std::memory_order_relaxed);
}

// ---- completing, in random order -------------------------------------------

bool test_one(State &s) {
    if (s.ops.empty()) return false;
    size_t i = s.act_rng.below(s.ops.size());
    int done = 0;
    rdmx_msg_info_t info{};
    rdmx_status_t st = rdmx_test(&s.ops[i].req, &done, &info);
    ++s.st.tests;
    if (!done) {
        RT_CHECK(st == RDMX_INPROGRESS, "rdmx_test on a pending request returned %d (%s)", st, rdmx_strerror(st));
        return false;
    }
    RT_CHECK(s.ops[i].req == nullptr, "rdmx_test reported completion but left the handle set");
    finish(s, i, st, info);
    return true;
}

// rdmx_waitany over a random subset holding at least one safe request.
bool waitany_some(State &s) {
    std::vector<size_t> safe, pick;
    for (size_t i = 0; i < s.ops.size(); ++i)
        if (s.ops[i].safe) safe.push_back(i);
    if (safe.empty()) return false;
    size_t must = safe[s.act_rng.below(safe.size())];
    for (size_t i = 0; i < s.ops.size(); ++i)
        if (i == must || s.act_rng.chance(50)) pick.push_back(i);
    std::vector<rdmx_request_h> h;
    for (size_t i : pick) h.push_back(s.ops[i].req);
    size_t idx = SIZE_MAX;
    rdmx_msg_info_t info{};
    rdmx_status_t st = rdmx_waitany(h.size(), h.data(), &idx, &info);
    ++s.st.waitanys;
    RT_CHECK(idx < h.size() && h[idx] == nullptr, "rdmx_waitany over %zu requests returned index %zu", h.size(), idx);
    for (size_t j = 0; j < h.size(); ++j)
        RT_CHECK(j == idx || h[j] == s.ops[pick[j]].req, "rdmx_waitany changed handle %zu, not the one it completed", j);
    finish(s, pick[idx], st, info);
    return true;
}

// rdmx_waitall, or rdmx_wait for a single one, over safe requests only.
bool waitall_safe(State &s) {
    std::vector<size_t> pick;
    for (size_t i = 0; i < s.ops.size(); ++i)
        if (s.ops[i].safe && s.act_rng.chance(60)) pick.push_back(i);
    if (pick.empty()) return false;
    if (pick.size() == 1) {
        rdmx_msg_info_t info{};
        rdmx_status_t st = rdmx_wait(&s.ops[pick[0]].req, &info);
        ++s.st.waits;
        RT_CHECK(s.ops[pick[0]].req == nullptr, "rdmx_wait left the handle set");
        finish(s, pick[0], st, info);
        return true;
    }
    std::vector<rdmx_request_h> h;
    for (size_t i : pick) h.push_back(s.ops[i].req);
    std::vector<rdmx_msg_info_t> infos(h.size());
    (void)rdmx_waitall(h.size(), h.data(), infos.data());  // each request's own status is in its info
    ++s.st.waitalls;
    for (size_t j = h.size(); j-- > 0;) {  // descending: finish() moves the last op into the hole
        RT_CHECK(h[j] == nullptr, "rdmx_waitall left handle %zu set", j);
        finish(s, pick[j], infos[j].error, infos[j]);
    }
    return true;
}

bool complete_some(State &s) {
    uint64_t c = s.act_rng.below(10);
    if (c < 6) return test_one(s);
    if (c < 8) return waitany_some(s) || test_one(s);
    return waitall_safe(s) || test_one(s);
}

// One random action; false when nothing happened.
bool step(State &s) {
    ++s.step;
    uint64_t a = s.act_rng.below(100);
    size_t before = s.ops.size() + s.st.sent + s.st.recvd;
    if (a < 30) post_send(s);
    else if (a < 55) post_recv(s);
    else if (a < 58) cancel_one(s);
    else return complete_some(s);
    return s.ops.size() + s.st.sent + s.st.recvd != before;
}

void idle(unsigned &idle_steps, bool busy) {
    idle_steps = busy ? 0 : idle_steps + 1;
    if (idle_steps > 64) {  // nothing moves: leave the CPUs to the progress threads and the peers
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        idle_steps = 0;
    }
}

// ---- phases -----------------------------------------------------------------

void poll_all(std::vector<rdmx_request_h> &reqs, const char *what) {
    for (;;) {
        bool all = true;
        for (rdmx_request_h &r : reqs) {
            if (r == nullptr) continue;
            int done = 0;
            rdmx_status_t st = rdmx_test(&r, &done, nullptr);
            if (done) RT_CHECK(st == RDMX_OK, "%s: %s", what, rdmx_strerror(st));
            else all = false;
        }
        if (all) return;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
}

void exchange_seed() {
    dog.phase = 1;
    if (opt.seed_given) return;
    std::vector<rdmx_request_h> reqs;
    if (me == 0) {
        std::random_device rd;
        opt.seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
        for (int p = 1; p < np; ++p) {
            reqs.emplace_back();
            RT_OK(rdmx_isend_in(ctx, RDMX_TAGSPACE_LIB, &opt.seed, 8, p, kCtlSeed, &reqs.back()));
        }
    } else {
        reqs.emplace_back();
        RT_OK(rdmx_irecv_in(ctx, RDMX_TAGSPACE_LIB, &opt.seed, 8, 0, kCtlSeed, &reqs.back()));
    }
    poll_all(reqs, "seed exchange");
}

void traffic(State &s, std::chrono::steady_clock::time_point end) {
    dog.phase = 2;
    unsigned idle_steps = 0;
    while (s.sending) {
        if ((s.step & 63) == 0 && opt.messages == 0 && std::chrono::steady_clock::now() >= end) s.sending = false;
        idle(idle_steps, step(s));
    }
}

struct Announce {
    std::vector<uint64_t> count_out, count_in;
    std::vector<std::vector<uint8_t>> log_in;
    std::vector<rdmx_request_h> out, count_req, log_req;
    std::vector<bool> known;
};

void announce(State &s, Announce &a) {
    const size_t n = static_cast<size_t>(np);
    a.count_out.resize(n);
    a.count_in.resize(n);
    a.log_in.resize(n);
    a.count_req.assign(n, nullptr);
    a.log_req.assign(n, nullptr);
    a.known.assign(n, false);
    for (size_t p = 0; p < n; ++p) {
        a.count_out[p] = s.sent_log[p].size();
        a.out.emplace_back();
        RT_OK(rdmx_isend_in(ctx, RDMX_TAGSPACE_LIB, &a.count_out[p], 8, static_cast<int>(p), kCtlCount, &a.out.back()));
        if (a.count_out[p] > 0) {
            a.out.emplace_back();
            RT_OK(rdmx_isend_in(ctx, RDMX_TAGSPACE_LIB, s.sent_log[p].data(), s.sent_log[p].size(),
                                static_cast<int>(p), kCtlLog, &a.out.back()));
        }
        RT_OK(rdmx_irecv_in(ctx, RDMX_TAGSPACE_LIB, &a.count_in[p], 8, static_cast<int>(p), kCtlCount, &a.count_req[p]));
    }
}

void test_ctl(rdmx_request_h *r, int *done, const char *what, size_t peer) {
    rdmx_status_t st = rdmx_test(r, done, nullptr);
    RT_CHECK(*done ? st == RDMX_OK : st == RDMX_INPROGRESS, "%s from %zu: %s", what, peer, rdmx_strerror(st));
}

// Advances the announcement receives; true once every sender's log is in.
bool announcements_in(Announce &a) {
    bool all = true;
    for (size_t p = 0; p < a.known.size(); ++p) {
        if (a.known[p]) continue;
        int done = 0;
        if (a.count_req[p] != nullptr) {
            test_ctl(&a.count_req[p], &done, "announcement count", p);
            if (done && a.count_in[p] > 0) {
                a.log_in[p].resize(a.count_in[p]);
                RT_OK(rdmx_irecv_in(ctx, RDMX_TAGSPACE_LIB, a.log_in[p].data(), a.count_in[p], static_cast<int>(p),
                                    kCtlLog, &a.log_req[p]));
            }
        } else if (a.log_req[p] != nullptr) {
            test_ctl(&a.log_req[p], &done, "announcement log", p);
        }
        a.known[p] = a.count_req[p] == nullptr && a.log_req[p] == nullptr;
        all = all && a.known[p];
    }
    return all;
}

bool drained(const State &s, const Announce &a) {
    if (count_sends(s) > 0) return false;
    for (size_t p = 0; p < a.known.size(); ++p) {
        if (!a.known[p]) return false;
        RT_CHECK(s.recv_from[p] <= a.count_in[p], "received %" PRIu64 " messages from %zu, which sent only %" PRIu64,
                 s.recv_from[p], p, a.count_in[p]);
        if (s.recv_from[p] < a.count_in[p]) return false;
    }
    return true;
}

// Receives until every announced message is in and every send is complete,
// then cancels the receives left over; a message matching one now is extra.
void drain(State &s, Announce &a) {
    dog.phase = 3;
    announce(s, a);
    unsigned idle_steps = 0;
    for (;;) {
        bool in = announcements_in(a);
        if (in && drained(s, a)) break;
        idle(idle_steps, step(s));
    }
    for (Op &op : s.ops)
        if (!op.canceled) {
            RT_OK(rdmx_cancel(op.req));
            op.canceled = true;
        }
    while (!s.ops.empty()) {
        rdmx_msg_info_t info{};
        size_t idx = SIZE_MAX;
        std::vector<rdmx_request_h> h;
        for (Op &op : s.ops) h.push_back(op.req);
        rdmx_status_t st = rdmx_waitany(h.size(), h.data(), &idx, &info);
        RT_CHECK(idx < h.size(), "rdmx_waitany over canceled receives returned index %zu", idx);
        finish(s, idx, st, info);
    }
    RT_CHECK(s.retired == s.recs.size(), "%zu receives never retired", s.recs.size() - s.retired);
    for (size_t p = 0; p < a.known.size(); ++p)
        RT_CHECK(s.recv_from[p] == a.count_in[p], "from %zu: %" PRIu64 " messages received, %" PRIu64 " announced (%s)",
                 p, s.recv_from[p], a.count_in[p], s.recv_from[p] > a.count_in[p] ? "extra" : "lost");
    poll_all(a.out, "announcement send");
}

// Per sender and tag the counts match the announced log; across tags, a
// receive with RDMX_ANY_TAG took no message of a sender while an earlier one
// of that sender went to a receive posted after it.
void check_logs(const State &s, const Announce &a) {
    for (size_t p = 0; p < a.log_in.size(); ++p) {
        std::vector<std::vector<uint64_t>> pos(kTags);  // pos[tag][k]: index in the sender's log
        for (size_t g = 0; g < a.log_in[p].size(); ++g) {
            RT_CHECK(a.log_in[p][g] < kTags, "log of %zu names tag %u", p, a.log_in[p][g]);
            pos[a.log_in[p][g]].push_back(g);
        }
        for (int t = 0; t < kTags; ++t)
            RT_CHECK(s.recv_k[p][static_cast<size_t>(t)] == pos[static_cast<size_t>(t)].size(),
                     "from %zu tag %d: received %" PRIu64 " messages, sent %zu", p, t, s.recv_k[p][static_cast<size_t>(t)],
                     pos[static_cast<size_t>(t)].size());
        uint64_t min_later = UINT64_MAX;
        for (size_t i = s.recs.size(); i-- > 0;) {
            const Rec &r = s.recs[i];
            if (!r.got || r.src != static_cast<int>(p)) continue;
            uint64_t g = pos[static_cast<size_t>(r.tag)][r.k];
            RT_CHECK(r.tag_pat >= 0 || g < min_later,
                     "non-overtaking: receive #%zu (source %d, RDMX_ANY_TAG) took message %" PRIu64 " of %zu (tag %d) "
                     "while its earlier message %" PRIu64 " went to a receive posted later",
                     i, r.src_pat, g, p, r.tag, min_later);
            min_later = std::min(min_later, g);
        }
    }
}

// Every rank tells every rank it is done, so nobody finalizes under traffic.
void final_exchange() {
    dog.phase = 4;
    std::vector<rdmx_request_h> reqs;
    std::vector<uint8_t> in(static_cast<size_t>(np));
    uint8_t one = 1;
    for (int p = 0; p < np; ++p) {
        reqs.emplace_back();
        RT_OK(rdmx_irecv_in(ctx, RDMX_TAGSPACE_LIB, &in[static_cast<size_t>(p)], 1, p, kCtlDone, &reqs.back()));
        reqs.emplace_back();
        RT_OK(rdmx_isend_in(ctx, RDMX_TAGSPACE_LIB, &one, 1, p, kCtlDone, &reqs.back()));
    }
    poll_all(reqs, "final exchange");
}

// ---- setup ------------------------------------------------------------------

double env_num(const char *name, double dflt) {
    const char *v = std::getenv(name);
    return v && *v ? std::strtod(v, nullptr) : dflt;
}

void parse(int argc, char **argv) {
    opt.seconds = env_num("RDMX_SOAK_SECONDS", opt.seconds);
    opt.max_size = static_cast<size_t>(env_num("RDMX_SOAK_MAX_SIZE", static_cast<double>(opt.max_size)));
    opt.grace = env_num("RDMX_SOAK_GRACE", opt.grace);
    if (const char *v = std::getenv("RDMX_SOAK_SEED"); v && *v) {
        opt.seed = std::strtoull(v, nullptr, 0);
        opt.seed_given = true;
    }
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string a = argv[i];
        const char *v = argv[i + 1];
        if (a == "--seconds") opt.seconds = std::strtod(v, nullptr);
        else if (a == "--max-size") opt.max_size = std::strtoull(v, nullptr, 0);
        else if (a == "--messages") opt.messages = std::strtoull(v, nullptr, 0);
        else if (a == "--grace") opt.grace = std::strtod(v, nullptr);
        else if (a == "--seed") {
            opt.seed = std::strtoull(v, nullptr, 0);
            opt.seed_given = true;
        } else RT_CHECK(false, "unknown option %s (see the comment at the top of soak_test.cc)", a.c_str());
    }
    RT_CHECK(argc % 2 == 1, "options come in pairs: --name value");
    RT_CHECK(opt.seconds > 0 && opt.grace > 0, "--seconds and --grace must be positive");
    eager_limit = static_cast<size_t>(env_num("RDMX_EAGER_LIMIT", 8192));
    safe_eager = std::min<size_t>(1024, std::min(eager_limit, static_cast<size_t>(env_num("RDMX_RNDV_THRESH", 1e9)) - 1));
}

void init_state(State &s) {
    const size_t n = static_cast<size_t>(np);
    s.send_rng.s = mix64(opt.seed ^ (0x53454e44ull + static_cast<uint64_t>(me)));
    s.act_rng.s = mix64(opt.seed ^ (0x41435453ull << 20) ^ static_cast<uint64_t>(me));
    s.sent_log.resize(n);
    s.send_k.assign(n, std::vector<uint64_t>(kTags, 0));
    s.recv_k.assign(n, std::vector<uint64_t>(kTags, 0));
    s.recv_from.assign(n, 0);
}

void report(const State &s, double secs) {
    const Stats &t = s.st;
    std::printf("soak rank %d: %.1f s; sent %" PRIu64 " (%.1f MiB, %" PRIu64 " over the eager limit, %" PRIu64
                " blocking); received %" PRIu64 " (%.1f MiB) through %" PRIu64 " exact / %" PRIu64 " any-source / %"
                PRIu64 " any-tag / %" PRIu64 " any-any blind and %" PRIu64 " probed receives (%" PRIu64
                " blocking); %" PRIu64 " cancels (%" PRIu64 " lost to a match); %" PRIu64 " tests, %" PRIu64
                " waitany, %" PRIu64 " waitall, %" PRIu64 " wait\n",
                me, secs, t.sent, static_cast<double>(t.sent_bytes) / 1048576.0, t.sent_large, t.sent_blocking, t.recvd,
                static_cast<double>(t.recvd_bytes) / 1048576.0, t.blind[3], t.blind[2], t.blind[1], t.blind[0],
                t.informed, t.blocking_recvs, t.cancels, t.cancel_lost_race, t.tests, t.waitanys, t.waitalls, t.waits);
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char **argv) {
    rt::g_test = test_name;
    parse(argc, argv);
    ctx = rt::init_or_skip();
    me = rdmx_rank(ctx);
    np = rdmx_size(ctx);
    watchdog_start(opt.seconds + opt.grace);
    exchange_seed();
    std::snprintf(test_name, sizeof(test_name), "soak seed %" PRIu64 ", rerun with --seed %" PRIu64, opt.seed, opt.seed);
    if (me == 0)
        std::printf("soak: seed %" PRIu64 ", %d ranks, %s %g, sizes 0..%zu B, eager limit %zu B\n", opt.seed, np,
                    opt.messages ? "messages per rank" : "seconds", opt.messages ? static_cast<double>(opt.messages)
                                                                            : opt.seconds, opt.max_size, eager_limit);
    std::fflush(stdout);
    const auto t0 = std::chrono::steady_clock::now();
    auto s = std::make_unique<State>();
    init_state(*s);
    traffic(*s, t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                          std::chrono::duration<double>(opt.seconds)));
    Announce a;
    drain(*s, a);
    check_logs(*s, a);
    final_exchange();
    report(*s, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    dog.phase = 5;
    RT_OK(rdmx_finalize(ctx));
    watchdog_stop();
    if (me == 0) std::printf("soak: OK on %d ranks, seed %" PRIu64 "\n", np, opt.seed);
    return 0;
}
