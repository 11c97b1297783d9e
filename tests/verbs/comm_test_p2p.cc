// comm_test's point-to-point cases: RDMX_PROC_NULL, sendrecv, the matched
// probe from four threads, generalized requests and abort (see comm_test.cc).
#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include "comm_checks.h"

namespace {

rdmx_context_h world;
int me, np;

bool is_proc_null(const rdmx_msg_info_t &i) {
    return i.source == RDMX_PROC_NULL && i.tag == RDMX_ANY_TAG && i.length == 0 && i.error == RDMX_OK;
}

#define EXPECT_PROC_NULL(info, what)                                                                             \
    RT_CHECK(is_proc_null(info), "%s: source %d tag %d length %zu error %d, expected PROC_NULL/ANY_TAG/0/OK", what, \
             (info).source, (info).tag, (info).length, (info).error)

void procnull_on(rdmx_context_h c, const char *name) {
    uint8_t buf[16];
    std::memset(buf, 0x5A, sizeof(buf));
    auto untouched = [&buf] {
        for (uint8_t b : buf)
            if (b != 0x5A) return false;
        return true;
    };
    rdmx_msg_info_t info{};
    RT_OK(rdmx_send(c, buf, sizeof(buf), RDMX_PROC_NULL, 3));
    RT_OK(rdmx_recv(c, buf, sizeof(buf), RDMX_PROC_NULL, 3, &info));
    EXPECT_PROC_NULL(info, "recv");
    RT_OK(rdmx_recv(c, buf, sizeof(buf), RDMX_PROC_NULL, RDMX_ANY_TAG, &info));
    EXPECT_PROC_NULL(info, "recv ANY_TAG");
    rdmx_request_h q[2] = {};
    RT_OK(rdmx_isend(c, buf, sizeof(buf), RDMX_PROC_NULL, 3, &q[0]));
    RT_OK(rdmx_irecv(c, buf, sizeof(buf), RDMX_PROC_NULL, 3, &q[1]));
    rdmx_msg_info_t infos[2];
    RT_OK(rdmx_waitall(2, q, infos));
    EXPECT_PROC_NULL(infos[1], "irecv");
    RT_OK(rdmx_sendrecv(c, buf, sizeof(buf), RDMX_PROC_NULL, 3, buf, sizeof(buf), RDMX_PROC_NULL, 3, &info));
    EXPECT_PROC_NULL(info, "sendrecv both PROC_NULL");
    // The matched probe of PROC_NULL: an empty message at once.
    rdmx_message_h msg = reinterpret_cast<rdmx_message_h>(1);
    RT_OK(rdmx_mprobe(c, RDMX_PROC_NULL, 3, &msg, &info));
    EXPECT_PROC_NULL(info, "mprobe");
    RT_CHECK(msg == nullptr, "%s: mprobe of PROC_NULL gave message handle %p, not NULL", name, static_cast<void *>(msg));
    RT_OK(rdmx_mrecv(buf, sizeof(buf), &msg, &info));
    EXPECT_PROC_NULL(info, "mrecv");
    RT_CHECK(msg == nullptr, "mrecv left the message handle set");
    int found = 0;
    msg = reinterpret_cast<rdmx_message_h>(1);
    RT_OK(rdmx_improbe(c, RDMX_PROC_NULL, RDMX_ANY_TAG, &found, &msg, &info));
    RT_CHECK(found == 1 && msg == nullptr, "%s: improbe of PROC_NULL: found %d, handle %p", name, found,
             static_cast<void *>(msg));
    rdmx_request_h r = nullptr;
    RT_OK(rdmx_imrecv(buf, sizeof(buf), &msg, &r));
    RT_OK(rdmx_wait(&r, &info));
    EXPECT_PROC_NULL(info, "imrecv");
    RT_CHECK(untouched(), "%s: a PROC_NULL receive wrote into the buffer", name);
    // A non-periodic shift: the ends talk to PROC_NULL.
    const int n = rdmx_size(c), rk = rdmx_rank(c);
    const int dest = rk + 1 < n ? rk + 1 : RDMX_PROC_NULL, src = rk > 0 ? rk - 1 : RDMX_PROC_NULL;
    int out = rdmx_comm_world_rank(c, rk), in = -7;
    RT_OK(rdmx_sendrecv(c, &out, sizeof(out), dest, 4, &in, sizeof(in), src, 4, &info));
    if (src == RDMX_PROC_NULL) {
        EXPECT_PROC_NULL(info, "shift at the first rank");
        RT_CHECK(in == -7, "%s: the shift wrote %d at the first rank", name, in);
    } else {
        RT_CHECK(in == rdmx_comm_world_rank(c, src) && info.source == src && info.tag == 4 && info.length == sizeof(in),
                 "%s shift: got %d from %d (tag %d, %zu bytes)", name, in, info.source, info.tag, info.length);
    }
}

void t_procnull() {
    procnull_on(world, "job");
    rdmx_context_h d = nullptr;
    RT_OK(rdmx_comm_dup(world, &d));
    procnull_on(d, "dup");
    RT_OK(rdmx_comm_free(&d));
}

// Periodic ring shifts of each size on a communicator, exact and wildcard source.
void shifts_on(const ct::View &v) {
    const int next = (v.r + 1) % v.n, prev = (v.r + v.n - 1) % v.n;
    int tag = 60;
    for (size_t len : {size_t{0}, size_t{8}, size_t{5000}, size_t{200000}}) {
        for (int wild = 0; wild < 2; ++wild, ++tag) {
            std::vector<uint8_t> out(len), in(len + 1, 0xEE);
            rt::fill(out, v.wr(), tag);
            rdmx_msg_info_t info{};
            RT_OK(rdmx_sendrecv(v.c, out.data(), len, next, tag, in.data(), len, wild ? RDMX_ANY_SOURCE : prev,
                                wild ? RDMX_ANY_TAG : tag, &info));
            RT_CHECK(info.source == prev && info.tag == tag && info.length == len,
                     "%s sendrecv len %zu: source %d tag %d length %zu", v.name, len, info.source, info.tag,
                     info.length);
            RT_CHECK(rt::verify(in.data(), len, v.w(prev), tag, len) == SIZE_MAX && in[len] == 0xEE,
                     "%s sendrecv len %zu: payload wrong", v.name, len);
        }
    }
    // With oneself.
    int out = 42 + v.r, in = -1;
    rdmx_msg_info_t info{};
    RT_OK(rdmx_sendrecv(v.c, &out, sizeof(out), v.r, 70, &in, sizeof(in), v.r, 70, &info));
    RT_CHECK(in == out && info.source == v.r, "%s sendrecv with oneself: %d from %d", v.name, in, info.source);
}

void t_sendrecv() {
    shifts_on(ct::view_of(world, "job"));
    rdmx_context_h rowc = nullptr;
    RT_OK(rdmx_comm_split(world, me / 2, -me, &rowc));  // pairs, reversed
    shifts_on(ct::view_of(rowc, "pair"));
    RT_OK(rdmx_comm_free(&rowc));
}

constexpr int kTagM = 21, kTagImp = 22, kTagOrder = 23;
constexpr size_t kHeader = 8;  // sender's rank and sequence number, then the pattern

// Message `seq` of a sender: mostly eager of varied length, every 16th rendezvous.
size_t mlen(int seq) { return seq % 16 == 15 ? ct::kRndvLen : kHeader + static_cast<size_t>(seq * 37 % 3000); }

std::vector<uint8_t> mbody(int sender, int seq) {
    std::vector<uint8_t> b(mlen(seq));
    rt::fill(b, sender, seq);
    std::memcpy(b.data(), &sender, 4);
    std::memcpy(b.data() + 4, &seq, 4);
    return b;
}

uint64_t checksum(const std::vector<uint8_t> &b) {
    uint64_t s = 0;
    for (size_t i = 0; i < b.size(); ++i) s += b[i] * (i % 251 + 1);
    return s;
}

// The sender's side: improbe messages, then two for the ordering check, then `count` for the threads.
void mprobe_sender(int count) {
    RT_OK(rdmx_barrier(world));  // rank 0 improbed an empty queue
    std::vector<uint8_t> b = mbody(me, 1000);
    RT_OK(rdmx_send(world, b.data(), b.size(), 0, kTagImp));
    for (int s = 0; s < 2; ++s) {
        std::vector<uint8_t> o = mbody(me, s);
        RT_OK(rdmx_send(world, o.data(), o.size(), 0, kTagOrder));
    }
    RT_OK(rdmx_barrier(world));
    for (int i = 0; i < count; ++i) {
        std::vector<uint8_t> m = mbody(me, i);
        RT_OK(rdmx_send(world, m.data(), m.size(), 0, kTagM));
    }
}

void improbe_phase() {
    rdmx_msg_info_t info{};
    rdmx_message_h msg = nullptr;
    int found = -1;
    RT_OK(rdmx_improbe(world, RDMX_ANY_SOURCE, kTagImp, &found, &msg, &info));
    RT_CHECK(found == 0 && msg == nullptr, "improbe found a message before anyone sent one");
    RT_OK(rdmx_barrier(world));
    for (int got = 0; got < np - 1; ++got) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        do {
            RT_OK(rdmx_improbe(world, RDMX_ANY_SOURCE, kTagImp, &found, &msg, &info));
            RT_CHECK(std::chrono::steady_clock::now() < deadline, "improbe: message %d never found", got);
        } while (found == 0);
        const int src = info.source;
        RT_CHECK(msg != nullptr && src > 0 && src < np && info.length == mlen(1000), "improbe: source %d length %zu",
                 src, info.length);
        int again = -1;
        rdmx_msg_info_t i2{};
        RT_OK(rdmx_iprobe(world, src, kTagImp, &again, &i2));
        RT_CHECK(again == 0, "a matched message is still visible to iprobe (from %d)", src);
        std::vector<uint8_t> in(info.length);
        rdmx_request_h r = nullptr;
        RT_OK(rdmx_imrecv(in.data(), in.size(), &msg, &r));
        RT_CHECK(msg == nullptr, "imrecv left the message handle set");
        RT_OK(rdmx_wait(&r, &i2));
        RT_CHECK(i2.source == src && i2.tag == kTagImp && in == mbody(src, 1000), "imrecv from %d: wrong message", src);
    }
    // Two matched messages from one sender come in send order; received the other way round.
    rdmx_message_h m[2] = {};
    rdmx_msg_info_t mi[2];
    for (int s = 0; s < 2; ++s) RT_OK(rdmx_mprobe(world, 1, kTagOrder, &m[s], &mi[s]));
    for (int s = 1; s >= 0; --s) {
        std::vector<uint8_t> in(mi[s].length);
        RT_OK(rdmx_mrecv(in.data(), in.size(), &m[s], nullptr));
        RT_CHECK(in == mbody(1, s), "matched message %d from rank 1 is not the %d-th sent", s, s);
    }
    for (int src = 2; src < np; ++src)  // the others' ordering messages
        for (int s = 0; s < 2; ++s) {
            std::vector<uint8_t> in(mlen(s));
            RT_OK(rdmx_recv(world, in.data(), in.size(), src, kTagOrder, nullptr));
            RT_CHECK(in == mbody(src, s), "message %d from %d out of order", s, src);
        }
    RT_OK(rdmx_barrier(world));
}

// Rank 0: four threads take the senders' messages with mprobe (any source)
// and mrecv until all are claimed; each must come exactly once.
void t_mprobe(int count) {
    RT_CHECK(np >= 2, "mprobe needs at least 2 ranks");
    if (me != 0) return mprobe_sender(count);
    improbe_phase();
    const int total = count * (np - 1);
    std::atomic<int> claimed{0};
    std::mutex mu;
    std::vector<int> seen(static_cast<size_t>(np * count), 0);
    uint64_t sum = 0;
    auto body = [&] {
        while (claimed.fetch_add(1) < total) {
            rdmx_message_h msg = nullptr;
            rdmx_msg_info_t info{}, i2{};
            RT_OK(rdmx_mprobe(world, RDMX_ANY_SOURCE, kTagM, &msg, &info));
            RT_CHECK(msg != nullptr && info.source > 0 && info.source < np && info.tag == kTagM &&
                         info.length >= kHeader,
                     "mprobe: source %d tag %d length %zu", info.source, info.tag, info.length);
            std::vector<uint8_t> in(info.length);
            RT_OK(rdmx_mrecv(in.data(), in.size(), &msg, &i2));
            int sender = -1, seq = -1;
            std::memcpy(&sender, in.data(), 4);
            std::memcpy(&seq, in.data() + 4, 4);
            RT_CHECK(i2.source == info.source && i2.length == info.length && sender == info.source && seq >= 0 &&
                     seq < count && in == mbody(sender, seq),
                     "mrecv: message (%d, %d) from %d, %zu bytes, is not what was sent", sender, seq, i2.source,
                     i2.length);
            std::lock_guard<std::mutex> lock(mu);
            seen[static_cast<size_t>(sender * count + seq)]++;
            sum += checksum(in);
        }
    };
    std::vector<std::thread> th;
    for (int t = 0; t < 4; ++t) th.emplace_back(body);
    for (auto &t : th) t.join();
    uint64_t want = 0;
    for (int s = 1; s < np; ++s)
        for (int i = 0; i < count; ++i) {
            want += checksum(mbody(s, i));
            RT_CHECK(seen[static_cast<size_t>(s * count + i)] == 1, "message %d of rank %d received %d times", i, s,
                     seen[static_cast<size_t>(s * count + i)]);
        }
    RT_CHECK(sum == want, "checksum %llu, expected %llu", static_cast<unsigned long long>(sum),
             static_cast<unsigned long long>(want));
    int found = -1;
    rdmx_msg_info_t info{};
    RT_OK(rdmx_iprobe(world, RDMX_ANY_SOURCE, RDMX_ANY_TAG, &found, &info));
    RT_CHECK(found == 0, "a message is left over after all were received (from %d, tag %d)", info.source, info.tag);
    std::printf("mprobe: %d messages from %d senders, each received once by 4 threads\n", total, np - 1);
}

void greq_on(rdmx_context_h c, const char *name) {
    using namespace std::chrono_literals;
    rdmx_request_h g = nullptr;
    RT_OK(rdmx_greq_start(c, &g));
    int done = -1;
    rdmx_msg_info_t info{};
    rdmx_status_t st = rdmx_test(&g, &done, &info);
    RT_CHECK(st == RDMX_INPROGRESS && done == 0 && g != nullptr, "%s: an uncompleted greq tests as %d (done %d)", name,
             st, done);
    rdmx_request_h h = g;
    std::thread t([h] {
        std::this_thread::sleep_for(50ms);
        RT_OK(rdmx_greq_complete(h, RDMX_OK));
    });
    st = rdmx_wait(&g, &info);
    t.join();
    RT_CHECK(st == RDMX_OK && g == nullptr && info.source == RDMX_PROC_NULL && info.length == 0 &&
                 info.error == RDMX_OK,
             "%s: greq wait returned %d, source %d length %zu", name, st, info.source, info.length);
    // An error status, completed while waitall also waits for a receive.
    rdmx_request_h q[2] = {};
    int x = 0, y = -1;
    RT_OK(rdmx_greq_start(c, &q[0]));
    RT_OK(rdmx_irecv(c, &y, sizeof(y), rdmx_rank(c), 8, &q[1]));
    h = q[0];
    std::thread t2([h, c, &x] {
        std::this_thread::sleep_for(30ms);
        RT_OK(rdmx_send(c, &x, sizeof(x), rdmx_rank(c), 8));
        RT_OK(rdmx_greq_complete(h, RDMX_ERR_CANCELED));
    });
    rdmx_msg_info_t infos[2];
    st = rdmx_waitall(2, q, infos);
    t2.join();
    RT_CHECK(st == RDMX_ERR_CANCELED && infos[0].error == RDMX_ERR_CANCELED && infos[1].error == RDMX_OK && y == 0 &&
                 q[0] == nullptr && q[1] == nullptr,
             "%s: waitall returned %d (greq %d, recv %d)", name, st, infos[0].error, infos[1].error);
    // Completed before the wait.
    RT_OK(rdmx_greq_start(c, &g));
    RT_OK(rdmx_greq_complete(g, RDMX_ERR_TRUNCATE));
    st = rdmx_wait(&g, &info);
    RT_CHECK(st == RDMX_ERR_TRUNCATE && info.error == RDMX_ERR_TRUNCATE, "%s: completed greq returned %d", name, st);
}

void t_greq() {
    greq_on(world, "job");
    rdmx_context_h d = nullptr;
    RT_OK(rdmx_comm_dup(world, &d));
    greq_on(d, "dup");
    RT_OK(rdmx_comm_free(&d));
    RT_CHECK(rdmx_greq_complete(nullptr, RDMX_OK) == RDMX_ERR_INVALID_ARG, "greq_complete(NULL) accepted");
    RT_CHECK(rdmx_greq_start(world, nullptr) == RDMX_ERR_INVALID_ARG, "greq_start into NULL accepted");
}

// Rank 1 aborts with 7 while rank 0 waits in a receive from it and the
// others in a barrier. Nothing may return: the job ends, mpirun's status 7.
// `alone`: rank 1 aborts on a communicator of its own (split from the job),
// which must end the whole job all the same.
void t_abort(bool alone) {
    RT_CHECK(np >= 2, "abort needs at least 2 ranks");
    rdmx_context_h sub = nullptr;
    if (alone) RT_OK(rdmx_comm_split(world, me == 1 ? 1 : 0, 0, &sub));
    RT_OK(rdmx_barrier(world));
    if (me == 1) {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        std::printf("abort: rank 1 calls rdmx_abort(7) on %s\n", alone ? "a communicator of its own" : "the job");
        std::fflush(stdout);
        rdmx_status_t st = rdmx_abort(alone ? sub : world, 7);
        RT_CHECK(false, "rdmx_abort returned %d", st);
    }
    int v = 0;
    rdmx_status_t st = me == 0 ? rdmx_recv(world, &v, sizeof(v), 1, 99, nullptr) : rdmx_barrier(world);
    RT_CHECK(false, "rank %d's %s returned %d (%s) after the abort instead of the process ending", me,
             me == 0 ? "receive" : "barrier", st, rdmx_strerror(st));
}

}  // namespace

void comm_p2p_case(const std::string &which, rdmx_context_h ctx, int count) {
    world = ctx;
    me = rdmx_rank(ctx);
    np = rdmx_size(ctx);
    if (which == "procnull") t_procnull();
    else if (which == "sendrecv") t_sendrecv();
    else if (which == "mprobe") t_mprobe(count);
    else if (which == "greq") t_greq();
    else if (which == "abort") t_abort(false);
    else if (which == "abort_alone") t_abort(true);
    else RT_CHECK(false, "unknown case %s", which.c_str());
}
