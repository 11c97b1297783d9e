// The sm transport alone, between forked processes (no engine, no device):
// message order and sizes, held slots and back-pressure, control-message
// reservation, get/put through CMA and through the copy pipeline, CMA denied
// by seccomp, a peer SIGKILLed mid-transfer, a peer scribbling on shared
// memory, a crash leaving nothing behind, and sleeping on the eventfd.
#include <dirent.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <cstddef>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "sm_harness.h"

using namespace smtest;
using rdmx::MsgOut;
using rdmx::wire::MsgType;
namespace sm = rdmx::sm;

namespace {

MsgOut eager(const std::vector<char> &body, int32_t tag) {
    MsgOut m;
    m.type = MsgType::kEager;
    m.tag = tag;
    m.length = body.size();
    m.body = body.data();
    m.body_len = body.size();
    return m;
}

void expect_all_ok(const JobResult &r) {
    EXPECT_FALSE(r.timed_out) << "a rank hung and was killed";
    for (size_t i = 0; i < r.status.size(); ++i) EXPECT_TRUE(r.ok(static_cast<int>(i))) << "rank " << i << " failed";
}

std::vector<char> body_of(size_t len, uint64_t salt) {
    std::vector<char> b(len);
    for (size_t i = 0; i < len; ++i) b[i] = static_cast<char>(pattern(i, salt));
    return b;
}

// Sends every size 0..eager_limit from each sender to rank 0 in turn.
void send_all_sizes(Ctx &c, size_t limit) {
    for (size_t len = 0; len <= limit; ++len) {
        const std::vector<char> b = body_of(len, len + static_cast<size_t>(c.rank));
        SM_CHECK(c.drive([&] { return c.t->can_send(0, len, false); }));
        SM_CHECK(c.t->send(0, eager(b, static_cast<int32_t>(len)), false));
    }
}

}  // namespace

// Two senders, every eager size: each pair's messages arrive in its order,
// byte-exact, with seq numbering per pair.
// The rings index by mask: a layout takes slot counts that are powers of
// two only (a peer's header naming another is refused like any bad field).
TEST(SmLayout, SlotCountIsAPowerOfTwo) {
    sm::Layout l;
    ASSERT_TRUE(sm::make_layout(2, 64, 256, sm::kMinChunk, &l));
    EXPECT_EQ(l.slot_mask, 63u);
    ASSERT_TRUE(sm::make_layout(2, sm::kMinSlots, 256, sm::kMinChunk, &l));
    EXPECT_EQ(l.slot_mask, sm::kMinSlots - 1);
    for (uint32_t bad : {48u, 65u, 3u, sm::kMaxSlots * 2, sm::kMaxSlots - 1})
        EXPECT_FALSE(sm::make_layout(2, bad, 256, sm::kMinChunk, &l)) << bad << " slots";
}

TEST(SmTransport, OrderedDeliveryOfEverySize) {
    constexpr size_t kLimit = 4096;
    auto r = run_job(3, [](Ctx &c) {
        if (c.rank != 0) {
            send_all_sizes(c, kLimit);
        } else {
            const size_t want = 2 * (kLimit + 1);
            SM_CHECK(c.drive([&] { return c.sink.arrivals.size() == want; }));
            size_t next[3] = {0, 0, 0};
            for (const auto &a : c.sink.arrivals) {
                SM_CHECK(a.peer == 1 || a.peer == 2);
                const size_t len = next[a.peer]++;
                SM_CHECK(a.h.type == static_cast<uint8_t>(MsgType::kEager) && a.h.tag == static_cast<int32_t>(len));
                SM_CHECK(a.h.seq == len && a.h.length == len && a.body == body_of(len, len + a.peer));
            }
            SM_CHECK(c.sink.failed.empty());
        }
        SM_CHECK(c.barrier());
    });
    expect_all_ok(r);
}

// The receiver holds every slot: the sender fills all but one slot with data,
// the last goes to a control message; releasing out of order frees nothing
// until the oldest slot is back. Another pair is unaffected meanwhile.
TEST(SmTransport, HeldSlotsBackPressureOnePairAndKeepACtrlSlot) {
    constexpr uint32_t kSlots = 8;
    auto r = run_job(3, [](Ctx &c) {
        Board *b = c.board;
        if (c.rank == 1) {
            // Rank 0 may still be progressing in the bootstrap barrier: an
            // arrival delivered there would be released before it holds.
            SM_CHECK(c.drive([&] { return b->flag[4].load() == 1; }));
            const std::vector<char> body = body_of(100, 1);
            uint32_t sent = 0;
            while (c.t->can_send(0, body.size(), false)) SM_CHECK(c.t->send(0, eager(body, static_cast<int32_t>(sent++)), false));
            SM_CHECK(sent == kSlots - 1);                     // one slot kept for control messages
            SM_CHECK(c.t->can_send(0, 8, true));
            MsgOut fin;
            fin.type = MsgType::kFin;
            const char fb[8] = {};
            fin.body = fb;
            fin.body_len = sizeof(fb);
            SM_CHECK(c.t->send(0, fin, true));
            SM_CHECK(!c.t->can_send(0, 8, true) && !c.t->can_send(0, 0, false));
            b->flag[0].store(1);                              // ring full
            SM_CHECK(c.drive([&] { return b->flag[1].load() == 1; }));  // receiver released all but the oldest
            SM_CHECK(!c.t->can_send(0, 0, false) && !c.t->can_send(0, 0, true));
            b->flag[2].store(1);
            SM_CHECK(c.drive([&] { return b->flag[3].load() == 1; }));  // oldest released
            SM_CHECK(c.t->can_send(0, 0, true) && c.t->can_send(0, 0, false));
        } else if (c.rank == 2) {
            SM_CHECK(c.drive([&] { return b->flag[0].load() == 1; }));
            for (int i = 0; i < 20; ++i) {                    // pair 2->0 flows while 1->0 is stuck
                const std::vector<char> body = body_of(10, 2);
                SM_CHECK(c.drive([&] { return c.t->can_send(0, body.size(), false); }));
                SM_CHECK(c.t->send(0, eager(body, i), false));
            }
        } else {
            c.sink.hold_peer = 1;
            b->flag[4].store(1);                              // holding: rank 1 may fill the ring
            SM_CHECK(c.drive([&] { return b->flag[0].load() == 1; }));
            SM_CHECK(c.drive([&] {
                size_t n1 = 0;
                for (auto &a : c.sink.arrivals) n1 += a.peer == 1;
                return n1 == kSlots;
            }));
            SM_CHECK(c.drive([&] {  // 20 messages through 8 slots from rank 2 while rank 1 is stuck
                size_t n2 = 0;
                for (auto &a : c.sink.arrivals) n2 += a.peer == 2;
                return n2 == 20;
            }));
            std::vector<uint64_t> tok;
            for (auto &a : c.sink.arrivals)
                if (a.peer == 1) tok.push_back(a.token);
            SM_CHECK(c.sink.arrivals.back().peer != 1 || c.sink.arrivals.back().h.type == static_cast<uint8_t>(MsgType::kFin));
            for (size_t i = tok.size(); i-- > 1;) c.t->release(1, tok[i]);  // newest first, all but the oldest
            b->flag[1].store(1);
            SM_CHECK(c.drive([&] { return b->flag[2].load() == 1; }));
            c.t->release(1, tok[0]);
            b->flag[3].store(1);
            c.sink.hold_peer = -1;
            SM_CHECK(c.sink.failed.empty());
        }
        SM_CHECK(c.barrier());
    }, [](int, SmParams &p) { p.slots = kSlots; });
    expect_all_ok(r);
}

// A sender that filled the ring and went to sleep is woken when the
// receiver releases a slot it held since before the ring filled: the wake-up
// is judged by the head as it is at the release, not as the receiver last
// polled it (then one message in, and nothing to wake for).
TEST(SmTransport, SleepingBlockedSenderIsWokenByALateRelease) {
    constexpr uint32_t kSlots = 8;
    auto r = run_job(2, [](Ctx &c) {
        Board *b = c.board;
        const std::vector<char> body = body_of(32, 1);
        if (c.rank == 1) {
            SM_CHECK(c.drive([&] { return b->flag[0].load() == 1; }));  // rank 0 holds our slots
            SM_CHECK(c.t->send(0, eager(body, 0), false));
            SM_CHECK(c.drive([&] { return b->flag[1].load() == 1; }));  // delivered and held
            int32_t sent = 1;
            while (c.t->can_send(0, body.size(), false)) SM_CHECK(c.t->send(0, eager(body, sent++), false));
            SM_CHECK(sent == static_cast<int32_t>(kSlots) - 1);  // full: the last slot is for control
            SM_CHECK(c.t->arm());                                 // nothing to do but wait for room
            pollfd pf[2];
            const int n = c.t->fds(pf, 2, true);
            const uint64_t t0 = rdmx::now_ns();
            b->flag[2].store(1);
            SM_CHECK(poll(pf, static_cast<nfds_t>(n), 5000) == 1 && (pf[0].revents & POLLIN));
            SM_CHECK(static_cast<double>(rdmx::now_ns() - t0) * 1e-9 < 2.0);
            c.t->after_sleep();
            SM_CHECK(c.t->can_send(0, body.size(), false));
            SM_CHECK(c.t->send(0, eager(body, sent++), false));
        } else {
            c.sink.hold_peer = 1;
            b->flag[0].store(1);
            SM_CHECK(c.drive([&] { return c.sink.arrivals.size() == 1; }));
            b->flag[1].store(1);
            rdmx::Deadline d(kStepDeadline);  // no progress: the ring fills unseen
            while (b->flag[2].load() != 1) SM_CHECK(!d.expired());
            c.t->release(1, c.sink.arrivals[0].token);  // the sleeper must be woken by this
            c.sink.hold_peer = -1;
            SM_CHECK(c.drive([&] { return c.sink.arrivals.size() == kSlots; }));
        }
        SM_CHECK(c.barrier());
    }, [](int, SmParams &p) { p.slots = kSlots; });
    expect_all_ok(r);
}

namespace {

// Rank 0 exposes a read buffer and a write buffer to rank 1, which gets and
// puts sizes 1 B .. 8 MiB at odd offsets; both sides check every byte.
void get_put_sizes(bool cma) {
    static const size_t kSizes[] = {1, 7, 4095, 65536 + 3, (1u << 20) + 5, (3u << 20) + 1, 8u << 20};
    constexpr size_t kBuf = 13u << 20;  // every size at its own offset
    auto r = run_job(2, [cma](Ctx &c) {
        Board *b = c.board;
        SM_CHECK(c.t->cma_enabled() == cma);
        if (c.rank == 0) {
            std::vector<char> src(kBuf), dst(kBuf, 0);
            for (size_t i = 0; i < kBuf; ++i) src[i] = static_cast<char>(pattern(i, 3));
            rdmx::XferMem mr, mw;
            uint32_t kr = 0, kw = 0;
            SM_CHECK(c.t->expose(1, src.data(), kBuf, rdmx::Access::kRemoteRead, &mr, &kr) == RDMX_OK);
            SM_CHECK(c.t->expose(1, dst.data(), kBuf, rdmx::Access::kRemoteWrite, &mw, &kw) == RDMX_OK);
            b->word[0] = reinterpret_cast<uint64_t>(src.data());
            b->word[1] = reinterpret_cast<uint64_t>(dst.data());
            b->word[2] = kr;
            b->word[3] = kw;
            b->flag[0].store(1);
            SM_CHECK(c.drive([&] { return b->flag[1].load() == 1; }));  // serve until the requester is done
            size_t off = 1;
            for (size_t len : kSizes) {
                for (size_t i = 0; i < len; ++i) SM_CHECK(dst[off + i] == static_cast<char>(pattern(i, len)));
                off += len + len % 61 + 3;
            }
            SM_CHECK(c.t->unexpose(1, &mr, 1) && c.t->unexpose(1, &mw, 2));
        } else {
            SM_CHECK(c.drive([&] { return b->flag[0].load() == 1; }));
            uint64_t id = 0;
            size_t off = 1;
            for (size_t len : kSizes) {
                SM_CHECK(off + len <= kBuf);
                std::vector<char> got(len + 2, 'x'), out(len);
                for (size_t i = 0; i < len; ++i) out[i] = static_cast<char>(pattern(i, len));
                rdmx::XferMem m;
                SM_CHECK(c.t->get(0, got.data() + 1, m, b->word[0] + off, static_cast<uint32_t>(b->word[2]), len, ++id));
                SM_CHECK(c.t->put(0, out.data(), m, b->word[1] + off, static_cast<uint32_t>(b->word[3]), len, ++id));
                SM_CHECK(c.sink.rma.size() == id - 2);  // never reported from inside get/put
                SM_CHECK(c.drive([&] { return c.sink.rma.size() == id; }));
                for (size_t k = id - 2; k < id; ++k) SM_CHECK(c.sink.rma[k].ok && c.sink.rma[k].bytes == len);
                SM_CHECK(got[0] == 'x' && got[len + 1] == 'x');
                for (size_t i = 0; i < len; ++i) SM_CHECK(got[1 + i] == static_cast<char>(pattern(off + i, 3)));
                off += len + len % 61 + 3;
            }
            SM_CHECK(c.t->quiet());
            b->flag[1].store(1);
        }
        SM_CHECK(c.sink.failed.empty());
        SM_CHECK(c.barrier());
    }, [cma](int, SmParams &p) {
        p.cma = cma ? rdmx::SmCma::kOn : rdmx::SmCma::kOff;
        p.cma_thresh = cma ? 0 : SIZE_MAX;
    });
    expect_all_ok(r);
}

}  // namespace

TEST(SmTransport, GetPutThroughCma) { get_put_sizes(true); }
TEST(SmTransport, GetPutThroughCopyPipeline) { get_put_sizes(false); }

// A pipelined request with a key that matches no exposure (stale after
// unexpose, or the wrong access) is the requester's protocol violation: the
// exposer reports PROTOCOL, the requester's op fails.
TEST(SmTransport, PipelinedRequestOutsideTheExposureIsAViolation) {
    auto r = run_job(2, [](Ctx &c) {
        Board *b = c.board;
        std::vector<char> buf(1 << 16, 'a');
        if (c.rank == 0) {
            rdmx::XferMem m;
            uint32_t key = 0;
            SM_CHECK(c.t->expose(1, buf.data(), buf.size(), rdmx::Access::kRemoteRead, &m, &key) == RDMX_OK);
            b->word[0] = reinterpret_cast<uint64_t>(buf.data());
            b->word[1] = key;
            SM_CHECK(c.t->unexpose(1, &m, 1));  // key now stale
            b->flag[0].store(1);
            SM_CHECK(c.drive([&] { return !c.sink.failed.empty(); }));
            SM_CHECK(c.sink.failed[0].first == 1 && c.sink.failed[0].second == RDMX_ERR_PROTOCOL);
        } else {
            SM_CHECK(c.drive([&] { return b->flag[0].load() == 1; }));
            rdmx::XferMem m;
            SM_CHECK(c.t->get(0, buf.data(), m, b->word[0], static_cast<uint32_t>(b->word[1]), 100, 7));
            SM_CHECK(c.drive([&] { return !c.sink.failed.empty(); }));
            SM_CHECK(c.sink.rma.size() == 1 && !c.sink.rma[0].ok && c.sink.rma_before_fail == 1);
            SM_CHECK(c.sink.failed[0].second == RDMX_ERR_PEER_LOST);
        }
    }, [](int, SmParams &p) { p.cma = rdmx::SmCma::kOff; });
    expect_all_ok(r);
}

namespace {

// Returns EPERM for process_vm_readv/writev, as a container's policy would.
void deny_cma_by_seccomp() {
    sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_writev, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
    };
    sock_fprog prog{static_cast<unsigned short>(sizeof(f) / sizeof(f[0])), f};
    SM_CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
    SM_CHECK(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0);
}

std::string slurp(const char *path) {
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

}  // namespace

// Rank 1 runs under a seccomp filter denying CMA: it says why in one line
// and its gets (which the threshold sends to CMA) go through the pipeline.
TEST(SmTransport, CmaDeniedBySeccompFallsBackWithANotice) {
    char log[] = "/tmp/rdmx-sm-notice-XXXXXX";
    const int lfd = mkstemp(log);
    ASSERT_GE(lfd, 0);
    auto r = run_job(2, [](Ctx &c) {
        Board *b = c.board;
        std::vector<char> buf(3u << 20);
        for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<char>(pattern(i, 5));
        if (c.rank == 0) {
            rdmx::XferMem m;
            uint32_t key = 0;
            SM_CHECK(c.t->cma_enabled());
            SM_CHECK(c.t->expose(1, buf.data(), buf.size(), rdmx::Access::kRemoteRead, &m, &key) == RDMX_OK);
            b->word[0] = reinterpret_cast<uint64_t>(buf.data());
            b->word[1] = key;
            b->flag[0].store(1);
            SM_CHECK(c.drive([&] { return b->flag[1].load() == 1; }));
        } else {
            SM_CHECK(!c.t->cma_enabled());
            SM_CHECK(std::strstr(c.t->cma_off_reason(), "process_vm_readv") != nullptr);
            SM_CHECK(c.drive([&] { return b->flag[0].load() == 1; }));
            std::vector<char> got(buf.size() - 3);
            rdmx::XferMem m;
            SM_CHECK(c.t->get(0, got.data(), m, b->word[0] + 3, static_cast<uint32_t>(b->word[1]), got.size(), 1));
            SM_CHECK(c.drive([&] { return c.sink.rma.size() == 1; }));
            SM_CHECK(c.sink.rma[0].ok && std::memcmp(got.data(), buf.data() + 3, got.size()) == 0);
            b->flag[1].store(1);
        }
        SM_CHECK(c.barrier());
    }, [lfd](int rank, SmParams &p) {
        p.cma_thresh = 0;  // CMA for every size, when allowed
        if (rank == 1) {
            dup2(lfd, STDERR_FILENO);
            deny_cma_by_seccomp();
        }
    });
    expect_all_ok(r);
    const std::string out = slurp(log);
    unlink(log);
    close(lfd);
    EXPECT_NE(out.find("cross-memory attach unavailable (process_vm_readv: Operation not permitted"), std::string::npos)
        << out;
    EXPECT_EQ(out.find("unavailable", out.find("unavailable") + 1), std::string::npos) << "notice logged twice: " << out;
}

// Rank 1 dies (SIGKILL) while rank 0's pipelined get from it is under way:
// the get fails first, then PEER_LOST "process exited", within a second.
TEST(SmTransport, PeerKilledMidTransferIsLostInBoundedTime) {
    auto r = run_job(2, [](Ctx &c) {
        Board *b = c.board;
        std::vector<char> buf(4u << 20, 'k');
        if (c.rank == 1) {
            rdmx::XferMem m;
            uint32_t key = 0;
            SM_CHECK(c.t->expose(0, buf.data(), buf.size(), rdmx::Access::kRemoteRead, &m, &key) == RDMX_OK);
            b->word[0] = reinterpret_cast<uint64_t>(buf.data());
            b->word[1] = key;
            b->flag[0].store(1);
            // Wait without progress until the request is in our ring, then die
            // with the get unserved (serving would finish it in microseconds).
            rdmx::Deadline d(kStepDeadline);
            while (b->flag[1].load() != 1) SM_CHECK(!d.expired());
            raise(SIGKILL);
        } else {
            SM_CHECK(c.drive([&] { return b->flag[0].load() == 1; }));
            rdmx::XferMem m;
            SM_CHECK(c.t->get(1, buf.data(), m, b->word[0], static_cast<uint32_t>(b->word[1]), buf.size(), 9));
            c.t->progress(false);  // the request goes out
            b->flag[1].store(1);
            const uint64_t t0 = rdmx::now_ns();
            SM_CHECK(c.drive([&] { return !c.sink.failed.empty(); }, 2.0));
            const double secs = static_cast<double>(rdmx::now_ns() - t0) * 1e-9;
            std::fprintf(stderr, "rank 0: peer loss noticed after %.3f s\n", secs);
            SM_CHECK(secs < 1.0);
            SM_CHECK(c.sink.failed[0].first == 1 && c.sink.failed[0].second == RDMX_ERR_PEER_LOST);
            SM_CHECK(c.sink.reason == "process exited");
            SM_CHECK(c.sink.rma.size() == 1 && !c.sink.rma[0].ok && c.sink.rma_before_fail == 1);
            SM_CHECK(!c.t->usable(1) && c.t->quiet());
            SM_CHECK(!c.t->can_send(1, 0, true));
        }
    }, [](int, SmParams &p) { p.cma = rdmx::SmCma::kOff; });
    EXPECT_FALSE(r.timed_out);
    EXPECT_TRUE(r.ok(0));
    EXPECT_TRUE(r.killed(1));
}

namespace {

enum class Scribble { kHeadAhead, kHeadBack, kSlotLength, kSlotKind, kSeq, kMsgHdr, kPipeReq, kSegHeader };

// Rank 2 writes garbage into its ring in rank 0's segment (or its own
// header); rank 0 must report PROTOCOL for rank 2 only and keep receiving
// from rank 1.
void scribble_case(Scribble what) {
    auto r = run_job(3, [what](Ctx &c) {
        Board *b = c.board;
        if (c.rank == 2) {
            const SmAddress &a0 = b->addr[0];
            char path[64];
            std::snprintf(path, sizeof(path), "/proc/%u/fd/%d", a0.pid, a0.seg_fd);
            const int fd = open(path, O_RDWR);
            SM_CHECK(fd >= 0);
            char *seg = static_cast<char *>(mmap(nullptr, a0.seg_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
            close(fd);
            SM_CHECK(seg != MAP_FAILED);
            sm::SegInfo info;
            std::memcpy(&info, seg, sizeof(info));
            sm::Layout l;
            SM_CHECK(sm::make_layout(info.nrings, info.nslots, info.slot_size, info.chunk, &l));
            auto *ring = reinterpret_cast<sm::RingCtl *>(seg + l.ring_off + l.ring_stride * 2);
            char *slot0 = reinterpret_cast<char *>(ring) + sizeof(sm::RingCtl);
            // One good message first, so the ring state is past zero.
            const std::vector<char> good = body_of(16, 9);
            SM_CHECK(c.t->send(0, eager(good, 1), false));
            char *slot1 = slot0 + l.slot_size;
            auto publish = [&] { ring->head.store(2, std::memory_order_release); };
            sm::SlotHdr sh{};
            rdmx::wire::MsgHdr h{};
            std::memcpy(&sh, slot0, sizeof(sh));
            std::memcpy(&h, slot0 + sizeof(sh), sizeof(h));
            h.seq = 1;
            switch (what) {
            case Scribble::kHeadAhead: ring->head.store(1000003); break;
            case Scribble::kHeadBack:
                SM_CHECK(c.drive([&] { return b->flag[3].load() == 1; }));
                ring->head.store(0);
                break;
            case Scribble::kSlotLength: sh.len = 0xfffffff0u; break;
            case Scribble::kSlotKind: sh.kind = 77; break;
            case Scribble::kSeq: h.seq = 12345; break;
            case Scribble::kMsgHdr: h.length = 999999; break;
            case Scribble::kPipeReq: sh.kind = 1; sh.len = sizeof(sm::PipeReq); break;
            case Scribble::kSegHeader: {
                char *own = nullptr;  // our own header, which rank 0 re-checks
                const SmAddress &a2 = b->addr[2];
                std::snprintf(path, sizeof(path), "/proc/self/fd/%d", a2.seg_fd);
                const int f2 = open(path, O_RDWR);
                own = static_cast<char *>(mmap(nullptr, a2.seg_size, PROT_READ | PROT_WRITE, MAP_SHARED, f2, 0));
                close(f2);
                SM_CHECK(own != MAP_FAILED);
                std::memset(own + offsetof(sm::SegInfo, nslots), 0xff, 8);
                break;
            }
            }
            if (what != Scribble::kHeadAhead && what != Scribble::kHeadBack && what != Scribble::kSegHeader) {
                std::memcpy(slot1, &sh, sizeof(sh));
                if (what == Scribble::kPipeReq) {
                    sm::PipeReq pr{3, 0, 0, 0, 0};  // op 3 does not exist
                    std::memcpy(slot1 + sizeof(sh), &pr, sizeof(pr));
                } else {
                    std::memcpy(slot1 + sizeof(sh), &h, sizeof(h));
                    std::memcpy(slot1 + sizeof(sh) + sizeof(h), good.data(), good.size());
                }
                publish();
            }
            b->flag[0].store(1);
            SM_CHECK(c.drive([&] { return b->flag[1].load() == 1; }));
        } else if (c.rank == 1) {
            for (int i = 0; i < 200; ++i) {
                const std::vector<char> body = body_of(static_cast<size_t>(i), 1);
                SM_CHECK(c.drive([&] { return c.t->can_send(0, body.size(), false); }));
                SM_CHECK(c.t->send(0, eager(body, i), false));
            }
            SM_CHECK(c.drive([&] { return b->flag[1].load() == 1; }));
        } else {
            SM_CHECK(c.drive([&] {
                size_t n1 = 0;
                for (auto &a : c.sink.arrivals) {
                    n1 += a.peer == 1;
                    if (a.peer == 2) b->flag[3].store(1);  // the good message from rank 2 is in
                }
                if (b->flag[0].load() == 0) return false;
                return !c.sink.failed.empty() && n1 == 200;
            }));
            SM_CHECK(c.sink.failed.size() == 1 && c.sink.failed[0].first == 2);
            SM_CHECK(c.sink.failed[0].second == RDMX_ERR_PROTOCOL);
            SM_CHECK(c.t->usable(1) && !c.t->usable(2));
            size_t from2 = 0, i1 = 0;
            for (auto &a : c.sink.arrivals) {
                if (a.peer == 2) ++from2;
                if (a.peer == 1) SM_CHECK(a.h.tag == static_cast<int32_t>(i1++) && a.body == body_of(a.h.tag, 1));
            }
            SM_CHECK(from2 <= 1);  // only the good message, never a bad one
            b->flag[1].store(1);
        }
    });
    expect_all_ok(r);
}

}  // namespace

TEST(SmTransport, ScribbledHeadAheadIsProtocolError) { scribble_case(Scribble::kHeadAhead); }
TEST(SmTransport, ScribbledHeadBackIsProtocolError) { scribble_case(Scribble::kHeadBack); }
TEST(SmTransport, ScribbledSlotLengthIsProtocolError) { scribble_case(Scribble::kSlotLength); }
TEST(SmTransport, ScribbledSlotKindIsProtocolError) { scribble_case(Scribble::kSlotKind); }
TEST(SmTransport, ScribbledSequenceIsProtocolError) { scribble_case(Scribble::kSeq); }
TEST(SmTransport, ScribbledMessageHeaderIsProtocolError) { scribble_case(Scribble::kMsgHdr); }
TEST(SmTransport, ScribbledPipelineRequestIsProtocolError) { scribble_case(Scribble::kPipeReq); }
TEST(SmTransport, ScribbledSegmentHeaderIsProtocolError) { scribble_case(Scribble::kSegHeader); }

namespace {

// Entries of `path` whose name holds "rdmx": other jobs running beside the
// test (ctest -j, an MPI benchmark) add and remove their own files there.
int count_rdmx_entries(const char *path) {
    DIR *d = opendir(path);
    if (d == nullptr) return -1;
    int n = 0;
    while (const dirent *e = readdir(d)) n += std::strstr(e->d_name, "rdmx") != nullptr;
    closedir(d);
    return n;
}

}  // namespace

// A rank SIGKILLed right after connect leaves nothing in /dev/shm; the
// survivor notices, and after disconnect_all holds no more descriptors than
// before it opened the transport.
TEST(SmTransport, CrashLeavesNothingBehind) {
    const int shm_before = count_rdmx_entries("/dev/shm");
    auto r = run_job(2, [](Ctx &c) {
        if (c.rank == 1) raise(SIGKILL);
        SM_CHECK(c.drive([&] { return !c.sink.failed.empty(); }));  // kStepDeadline: a sanitized rank's exit takes long
        SM_CHECK(c.sink.failed[0].second == RDMX_ERR_PEER_LOST);
        const int fds_before = static_cast<int>(c.board->word[16]);  // before open
        c.t->disconnect_all(0);
        SM_CHECK(count_fds() == fds_before);
    });
    EXPECT_FALSE(r.timed_out);
    EXPECT_TRUE(r.ok(0));
    EXPECT_TRUE(r.killed(1));
    EXPECT_EQ(count_rdmx_entries("/dev/shm"), shm_before);
}

// arm() says no while a message waits; once armed, a sender's message wakes
// the poll on fds() (the eventfd), and after_sleep() drains it.
TEST(SmTransport, SleepOnEventfdAndWakeBySender) {
    auto r = run_job(2, [](Ctx &c) {
        Board *b = c.board;
        if (c.rank == 1) {
            SM_CHECK(c.drive([&] { return b->flag[0].load() == 1; }));
            usleep(100000);
            const std::vector<char> body = body_of(8, 1);
            SM_CHECK(c.t->send(0, eager(body, 1), false));
            SM_CHECK(c.drive([&] { return b->flag[1].load() == 1; }));
            SM_CHECK(c.t->send(0, eager(body, 2), false));
            b->flag[2].store(1);
        } else {
            pollfd pf[4];
            const int n = c.t->fds(pf, 4, true);
            SM_CHECK(n == 2);  // our eventfd and rank 1's pidfd
            SM_CHECK(c.t->arm());
            const uint64_t t0 = rdmx::now_ns();  // before the flag: rank 1's 100 ms sleep starts after it
            b->flag[0].store(1);
            SM_CHECK(poll(pf, n, 5000) == 1 && (pf[0].revents & POLLIN));
            const double secs = static_cast<double>(rdmx::now_ns() - t0) * 1e-9;
            SM_CHECK(secs > 0.05 && secs < 2.0);
            c.t->after_sleep();
            SM_CHECK(c.drive([&] { return c.sink.arrivals.size() == 1; }));
            b->flag[1].store(1);
            rdmx::Deadline d(kStepDeadline);  // wait without progress: the message stays pending
            while (b->flag[2].load() != 1) SM_CHECK(!d.expired());
            SM_CHECK(!c.t->arm());  // a message is waiting: do not sleep
            SM_CHECK(poll(pf, 1, 0) == 0);  // and the sender did not write the eventfd (we were awake)
            SM_CHECK(c.drive([&] { return c.sink.arrivals.size() == 2; }));
        }
        SM_CHECK(c.barrier());
    });
    expect_all_ok(r);
}

// A peer whose segment belongs to another job (wrong job key) is refused at
// connect, naming it.
TEST(SmTransport, ConnectRefusesAForeignSegment) {
    Board *b = nullptr;
    g_expect_connect_ok = false;
    auto r = run_job(2, [](Ctx &c) { SM_CHECK(c.barrier()); }, [](int rank, SmParams &p) {
        if (rank == 1) p.job_key = 0xbad;
    }, &b);
    g_expect_connect_ok = true;
    expect_all_ok(r);
    EXPECT_EQ(static_cast<rdmx_status_t>(b->word[24]), RDMX_ERR_PROTOCOL);
    EXPECT_EQ(static_cast<rdmx_status_t>(b->word[25]), RDMX_ERR_PROTOCOL);
    munmap(b, sizeof(Board));
}

// 8 ranks on 2 cores, each sending to every other and sleeping on fds()
// whenever it has nothing to do: everything arrives (sleepers are woken).
TEST(SmTransport, EightRanksOnTwoCoresProgressWhileSleeping) {
    constexpr int kRanks = 8, kPerPeer = 200;
    auto r = run_job(kRanks, [](Ctx &c) {
        const std::vector<char> body = body_of(64, static_cast<uint64_t>(c.rank));
        int sent[kRanks] = {};
        const size_t want = static_cast<size_t>(kPerPeer) * (kRanks - 1);
        rdmx::Deadline d(kStepDeadline);
        int sleeps = 0, timeouts = 0;
        auto all_sent = [&] {
            for (int p = 0; p < kRanks; ++p)
                if (p != c.rank && sent[p] < kPerPeer) return false;
            return true;
        };
        while (c.sink.arrivals.size() < want || !all_sent()) {
            SM_CHECK(!d.expired());
            int did = c.t->progress(true);
            for (int p = 0; p < kRanks; ++p)
                while (p != c.rank && sent[p] < kPerPeer && c.t->can_send(p, body.size(), false)) {
                    SM_CHECK(c.t->send(p, eager(body, sent[p]++), false));
                    ++did;
                }
            if (did == 0 && c.t->arm()) {  // idle: sleep until a sender wakes us (a lost wake-up costs 1 s)
                pollfd pf[kRanks + 1];
                const int n = c.t->fds(pf, kRanks + 1, true);
                if (poll(pf, static_cast<nfds_t>(n), 1000) == 0) ++timeouts;  // nobody woke us
                c.t->after_sleep();
                ++sleeps;
            }
        }
        int next[kRanks] = {};
        for (auto &a : c.sink.arrivals) SM_CHECK(a.h.tag == next[a.peer]++ && a.body == body_of(64, a.peer));
        SM_CHECK(c.sink.failed.empty());
        std::fprintf(stderr, "rank %d: slept %d times, %d without a wake-up\n", c.rank, sleeps, timeouts);
        // Every sleep had work pending on a peer, which must wake us. A
        // receiver that judged the sender's need by the head it polled before
        // delivering, not the head at the release, lost wake-ups here under
        // load (SleepingBlockedSenderIsWokenByALateRelease pins it down). One
        // timeout is allowed for the window publish_tail leaves unfenced; a
        // lost wake-up per message would show as many (and breaking wake()
        // makes the run miss its deadline).
        SM_CHECK(timeouts <= 1);
        SM_CHECK(c.barrier());
    });
    expect_all_ok(r);
}
