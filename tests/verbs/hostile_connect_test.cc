// A hostile job member during bring-up, and a flood of refused requests.
// Three MPI processes: rdmx ranks 0 and 1, and a forger that takes rank 2's
// slot in the bootstrap (an MPI_Allgather callback) from another RDMA
// address than rank 0's. Then
//   1. while rank 0 is held back inside its bootstrap callback, the forger
//      sends rank 1 a connect request with the right job key claiming to be
//      rank 0. Rank 1 must refuse it (the source address is not the one rank
//      0 published); accepted, it would take rank 0's place and rank 0's own
//      request would then be refused as a duplicate, keeping it out of the
//      job. Rank 0 is released once the forgery was answered, and both rdmx
//      ranks must bring the mesh up and exchange messages;
//   2. with the mesh up, the forger sends rank 1 a burst of requests with a
//      wrong job key (a process outside the job) while ranks 0 and 1
//      exchange messages. Every one is refused, and rank 1 logs the refusals
//      at a bounded rate, not one line each (its stderr is captured and the
//      lines counted).
// Needs two RDMA ports with different IPv4 addresses (the test bed's rxe0
// and rxe1); skipped (77) otherwise, since a forger on rank 0's own address
// cannot be told apart by address.
#include <mpi.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/config.h"
#include "core/log.h"
#include "core/wire.h"
#include "boot_mimic.h"
#include "harness.h"
#include "boot_mimic.h"
#include "transport/device.h"

namespace {

using namespace rdmx;
namespace w = rdmx::wire;
using Clock = std::chrono::steady_clock;

constexpr int kForger = 2;
constexpr int kVictim = 1;          // receives the forged requests
constexpr int kImpersonated = 0;    // the rank the forger claims to be
constexpr int kTagGo = 41, kTagFloodDone = 42, kTagPing = 7;
constexpr int kFloodRequests = 30;
constexpr int kEventWaitMs = 30000;


int g_me = -1;
int g_gathers = 0;  // rank 0: bootstrap rounds so far; held back once, after the second

// Rank 0 waits, after the exchange of rc addresses (the bootstrap's second
// round), until the forger's request was answered: its own connect request
// then reaches rank 1 second, whatever the timing.
int gather(const void *in, void *out, size_t len, void *) {
    int rc = MPI_Allgather(in, static_cast<int>(len), MPI_BYTE, out, static_cast<int>(len), MPI_BYTE, MPI_COMM_WORLD);
    if (g_me == kImpersonated && ++g_gathers == 2) {
        int go = 0;
        MPI_Recv(&go, 1, MPI_INT, kForger, kTagGo, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    return rc;
}

// Usable RDMA ports with distinct IPv4 addresses, by device name.
std::vector<DeviceChoice> distinct_ports() {
    std::vector<DeviceChoice> out;
    int n = 0;
    ibv_device **list = ibv_get_device_list(&n);
    std::vector<std::string> names;
    for (int i = 0; i < n; ++i) names.emplace_back(ibv_get_device_name(list[i]));
    if (list) ibv_free_device_list(list);
    std::sort(names.begin(), names.end());
    int saved = g_log_level.load();
    log_set_level(-1);  // a port without an address is not an error here
    for (const std::string &name : names) {
        Config cfg;
        if (cfg.load(nullptr) != RDMX_OK) continue;
        cfg.device = name;
        cfg.ifaddr.clear();
        DeviceChoice dc;
        if (select_device(cfg, 0, &dc) != RDMX_OK) continue;
        bool dup = false;
        for (const DeviceChoice &o : out) dup |= o.addr.sin_addr.s_addr == dc.addr.sin_addr.s_addr;
        if (!dup) out.push_back(dc);
    }
    log_set_level(saved);
    return out;
}

// ---- forger ------------------------------------------------------------------
struct Forger {
    rdma_event_channel *ch = nullptr;
    rdma_cm_id *listen_id = nullptr;
    ibv_pd *pd = nullptr;
    ibv_cq *cq = nullptr;
    ibv_mr *mr = nullptr;
    std::vector<char> buf = std::vector<char>(4096);
    std::vector<rdma_cm_id *> accepted;
    rdma_cm_id *probe = nullptr;  // the forged request in flight
    int probe_result = -2;        // -2 pending, -1 established or no rdmx reason, else the reject reason
    bool probe_established = false;
    int established = 0;
    sockaddr_in self{};
    uint64_t key = 0;

    ~Forger() {
        for (rdma_cm_id *id : accepted) {
            if (id->qp) rdma_destroy_qp(id);
            rdma_destroy_id(id);
        }
        drop_probe();
        if (mr) ibv_dereg_mr(mr);
        if (cq) ibv_destroy_cq(cq);
        if (pd) ibv_dealloc_pd(pd);
        if (listen_id) rdma_destroy_id(listen_id);
        if (ch) rdma_destroy_event_channel(ch);
    }
    void drop_probe() {
        if (probe == nullptr) return;
        if (probe->qp) rdma_destroy_qp(probe);
        rdma_destroy_id(probe);
        probe = nullptr;
    }
    void make_qp(rdma_cm_id *id) {
        if (pd == nullptr) {
            pd = ibv_alloc_pd(id->verbs);
            cq = ibv_create_cq(id->verbs, 256, nullptr, nullptr, 0);
            mr = ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
            RT_CHECK(pd && cq && mr, "forger: verbs set-up failed");
        }
        ibv_qp_init_attr qa{};
        qa.send_cq = qa.recv_cq = cq;
        qa.qp_type = IBV_QPT_RC;
        qa.cap.max_send_wr = qa.cap.max_recv_wr = 16;
        qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
        RT_CHECK(rdma_create_qp(id, pd, &qa) == 0, "forger: rdma_create_qp: %s", strerror(errno));
    }
    void accept(rdma_cm_event *ev) {
        w::ConnectPriv cp{};
        RT_CHECK(w::decode_connect(ev->param.conn.private_data, ev->param.conn.private_data_len, &cp) ==
                     w::DecodeError::kOk, "forger: bad connect private data");
        make_qp(ev->id);
        accepted.push_back(ev->id);
        w::AcceptPriv ap{};
        ap.magic = w::kMagic;
        ap.version = w::kVersion;
        ap.length = sizeof(ap);
        ap.job_key = key;
        ap.src_rank = kForger;
        ap.credits = 8;
        ap.credit_addr = reinterpret_cast<uint64_t>(buf.data());
        ap.credit_rkey = mr->rkey;
        rdma_conn_param p{};
        p.private_data = &ap;
        p.private_data_len = sizeof(ap);
        p.responder_resources = p.initiator_depth = 1;
        p.rnr_retry_count = 7;
        RT_CHECK(rdma_accept(ev->id, &p) == 0, "forger: rdma_accept: %s", strerror(errno));
    }
    // Starts one connect request to `to` from our own address, carrying `cp`.
    void start_probe(const sockaddr_in &to) {
        RT_CHECK(rdma_create_id(ch, &probe, nullptr, RDMA_PS_TCP) == 0, "forger: rdma_create_id");
        sockaddr_in src = self, dst = to;
        src.sin_port = 0;
        RT_CHECK(rdma_resolve_addr(probe, reinterpret_cast<sockaddr *>(&src), reinterpret_cast<sockaddr *>(&dst),
                                   2000) == 0, "forger: rdma_resolve_addr: %s", strerror(errno));
        probe_result = -2;
        probe_established = false;
    }
    void on_probe_event(rdma_cm_event *ev, const w::ConnectPriv &cp) {
        switch (ev->event) {
        case RDMA_CM_EVENT_ADDR_RESOLVED: rdma_resolve_route(probe, 2000); return;
        case RDMA_CM_EVENT_ROUTE_RESOLVED: {
            make_qp(probe);
            rdma_conn_param p{};
            p.private_data = &cp;
            p.private_data_len = sizeof(cp);
            p.responder_resources = p.initiator_depth = 1;
            RT_CHECK(rdma_connect(probe, &p) == 0, "forger: rdma_connect");
            return;
        }
        case RDMA_CM_EVENT_REJECTED: {
            w::RejectPriv rp{};
            probe_result = w::decode_reject(ev->param.conn.private_data, ev->param.conn.private_data_len, &rp) ==
                                   w::DecodeError::kOk ? rp.reason : -1;
            return;
        }
        case RDMA_CM_EVENT_ESTABLISHED: probe_established = true; probe_result = -1; return;
        default:
            RT_CHECK(false, "forger: forged request got %s (status %d)", rdma_event_str(ev->event), ev->status);
        }
    }
    // Handles CM events until `done` holds or kEventWaitMs pass without one.
    template <class Pred> void run(const w::ConnectPriv &cp, Pred done) {
        while (!done()) {
            pollfd p{ch->fd, POLLIN, 0};
            RT_CHECK(poll(&p, 1, kEventWaitMs) > 0, "forger: no CM event in %d ms", kEventWaitMs);
            rdma_cm_event *ev = nullptr;
            if (rdma_get_cm_event(ch, &ev) != 0) continue;
            if (probe != nullptr && ev->id == probe) on_probe_event(ev, cp);
            else if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) accept(ev);
            else if (ev->event == RDMA_CM_EVENT_ESTABLISHED) ++established;
            rdma_ack_cm_event(ev);
        }
    }
};

int forge_during_bringup(Forger &f, const std::vector<rdmx::RcRecord> &all) {
    sockaddr_in victim{};
    victim.sin_family = AF_INET;
    victim.sin_addr.s_addr = all[kVictim].addr.ip;
    victim.sin_port = htons(all[kVictim].addr.port);
    w::ConnectPriv cp{};
    cp.magic = w::kMagic;
    cp.version = w::kVersion;
    cp.length = sizeof(cp);
    cp.job_key = f.key;
    cp.src_rank = kImpersonated;
    cp.dst_rank = kVictim;
    cp.credit_addr = reinterpret_cast<uint64_t>(f.buf.data());
    cp.credit_rkey = f.mr ? f.mr->rkey : 0;
    cp.credits = 8;
    f.start_probe(victim);
    f.run(cp, [&] { return f.probe_result != -2; });
    int go = 1;
    MPI_Send(&go, 1, MPI_INT, kImpersonated, kTagGo, MPI_COMM_WORLD);  // rank 0 may connect now
    const int want = static_cast<int>(w::RejectReason::kAddressMismatch);
    const bool ok = !f.probe_established && f.probe_result == want;
    std::printf("forger: request claiming rank %d from another address -> %s (%s)\n", kImpersonated,
                ok ? "refused as expected" : "WRONG", f.probe_established ? "ESTABLISHED: rank 1 took the forger for rank 0"
                : f.probe_result < 0 ? "no rdmx reason" : w::reject_reason_name(static_cast<w::RejectReason>(f.probe_result)));
    std::fflush(stdout);
    f.drop_probe();
    f.run(cp, [&] { return f.established == kForger; });  // both rdmx ranks connected to us
    return ok ? 0 : 1;
}

// Requests from outside the job (wrong key); each must be refused as such.
int flood(Forger &f, const std::vector<rdmx::RcRecord> &all) {
    sockaddr_in victim{};
    victim.sin_family = AF_INET;
    victim.sin_addr.s_addr = all[kVictim].addr.ip;
    victim.sin_port = htons(all[kVictim].addr.port);
    w::ConnectPriv cp{};
    cp.magic = w::kMagic;
    cp.version = w::kVersion;
    cp.length = sizeof(cp);
    cp.job_key = f.key ^ 0x5a5a;
    cp.dst_rank = kVictim;
    int wrong = 0;
    for (int i = 0; i < kFloodRequests; ++i) {
        f.start_probe(victim);
        f.run(cp, [&] { return f.probe_result != -2; });
        wrong += f.probe_result != static_cast<int>(w::RejectReason::kBadJobKey);
        f.drop_probe();
    }
    std::printf("forger: %d requests from outside the job, %d not refused as such\n", kFloodRequests, wrong);
    std::fflush(stdout);
    return wrong == 0 ? 0 : 1;
}

int run_forger(const DeviceChoice &dev, int np) {
    Forger f;
    RT_CHECK((f.ch = rdma_create_event_channel()) != nullptr, "forger: channel");
    RT_CHECK(rdma_create_id(f.ch, &f.listen_id, nullptr, RDMA_PS_TCP) == 0, "forger: id");
    f.self = dev.addr;
    RT_CHECK(rdma_bind_addr(f.listen_id, reinterpret_cast<sockaddr *>(&f.self)) == 0, "forger: bind");
    RT_CHECK(rdma_listen(f.listen_id, 64) == 0, "forger: listen");
    std::vector<rdmx::RcRecord> all;
    f.key = rt::join_bootstrap(gather, np, dev.addr.sin_addr.s_addr, ntohs(rdma_get_src_port(f.listen_id)), &all);
    RT_CHECK(all[kImpersonated].addr.ip != dev.addr.sin_addr.s_addr, "rank 0 and the forger share an address");
    int bad = forge_during_bringup(f, all);
    MPI_Barrier(MPI_COMM_WORLD);  // the mesh is up
    MPI_Barrier(MPI_COMM_WORLD);  // rank 1 captures its log
    bad += flood(f, all);
    int done = 1;
    MPI_Send(&done, 1, MPI_INT, kImpersonated, kTagFloodDone, MPI_COMM_WORLD);
    MPI_Send(&done, 1, MPI_INT, kVictim, kTagFloodDone, MPI_COMM_WORLD);
    // Answer the rdmx ranks' disconnects while they finalize.
    MPI_Request fin;
    MPI_Ibarrier(MPI_COMM_WORLD, &fin);
    for (int flag = 0; !flag;) {
        MPI_Test(&fin, &flag, MPI_STATUS_IGNORE);
        pollfd p{f.ch->fd, POLLIN, 0};
        if (poll(&p, 1, 10) <= 0) continue;
        rdma_cm_event *ev = nullptr;
        if (rdma_get_cm_event(f.ch, &ev) != 0) continue;
        if (ev->event == RDMA_CM_EVENT_DISCONNECTED) rdma_disconnect(ev->id);
        rdma_ack_cm_event(ev);
    }
    return bad;
}

// ---- rdmx ranks ----------------------------------------------------------------
struct Capture {  // rank 1's stderr into a file while the flood lasts
    int saved = -1;
    std::string path;
    void start() {
        const char *dir = std::getenv("TMPDIR");
        path = std::string(dir ? dir : "/tmp") + "/rdmx-hostile-connect-" + std::to_string(getpid()) + ".log";
        int fd = open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0600);
        RT_CHECK(fd >= 0, "open %s: %s", path.c_str(), strerror(errno));
        std::fflush(stderr);
        saved = dup(STDERR_FILENO);
        dup2(fd, STDERR_FILENO);
        close(fd);
    }
    std::string stop() {
        std::fflush(stderr);
        dup2(saved, STDERR_FILENO);
        close(saved);
        std::string text;
        int fd = open(path.c_str(), O_RDONLY);
        char b[4096];
        for (ssize_t n; fd >= 0 && (n = read(fd, b, sizeof(b))) > 0;) text.append(b, static_cast<size_t>(n));
        if (fd >= 0) close(fd);
        unlink(path.c_str());
        return text;
    }
};

int count(const std::string &text, const char *what) {
    int n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

// Messages back and forth between ranks 0 and 1 until the forger is done.
void exchange_until_flood_done(rdmx_context_h ctx, int me) {
    const int other = 1 - me;
    MPI_Request done;
    int flag = 0, dummy = 0;
    MPI_Irecv(&dummy, 1, MPI_INT, kForger, kTagFloodDone, MPI_COMM_WORLD, &done);
    for (int i = 0; ; ++i) {
        int out = i * 2 + me, in = -1;
        rdmx_request_h q[2];
        RT_OK(rdmx_irecv(ctx, &in, sizeof(in), other, kTagPing, &q[0]));
        RT_OK(rdmx_isend(ctx, &out, sizeof(out), other, kTagPing, &q[1]));
        RT_OK(rdmx_waitall(2, q, nullptr));
        RT_CHECK(in == i * 2 + other, "exchange %d: got %d from rank %d", i, in, other);
        MPI_Test(&done, &flag, MPI_STATUS_IGNORE);
        // Both ranks stop on the same round: the decision travels with the data.
        int stop = flag, peer_stop = 0;
        RT_OK(rdmx_irecv(ctx, &peer_stop, sizeof(peer_stop), other, kTagPing + 1, &q[0]));
        RT_OK(rdmx_isend(ctx, &stop, sizeof(stop), other, kTagPing + 1, &q[1]));
        RT_OK(rdmx_waitall(2, q, nullptr));
        if (stop || peer_stop) break;
    }
    if (!flag) MPI_Wait(&done, MPI_STATUS_IGNORE);
}

int run_rdmx(int me, int np) {
    rdmx_config_t cfg;
    rdmx_config_init(&cfg);
    cfg.allgather = gather;
    cfg.rank = me;
    cfg.size = np;
    rdmx_context_h ctx = nullptr;
    rdmx_status_t st = rdmx_init(&cfg, &ctx);
    RT_CHECK(st == RDMX_OK, "rdmx_init with a forger in the job: %s", rdmx_strerror(st));
    MPI_Barrier(MPI_COMM_WORLD);  // the mesh is up
    Capture cap;
    if (me == kVictim) cap.start();
    MPI_Barrier(MPI_COMM_WORLD);
    const auto t0 = Clock::now();
    exchange_until_flood_done(ctx, me);
    int bad = 0;
    if (me == kVictim) {
        // Past one rate-limit interval, so a summary of the suppressed lines is due.
        const auto until = Clock::now() + std::chrono::milliseconds(1200);
        while (Clock::now() < until) {
            (void)rdmx_progress(ctx);
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
        std::string log = cap.stop();
        // A refusal line names one request, a summary line counts the rest.
        const int lines = count(log, "refusing a connect request") + count(log, "more connect request(s)");
        const int allowed = 2 + static_cast<int>(secs);
        std::fputs(log.c_str(), stderr);
        std::printf("rank 1: %d refusal log lines for %d refused requests in %.1f s (at least 1, at most %d "
                    "allowed)\n", lines, kFloodRequests, secs, allowed);
        bad += lines < 1 || lines > allowed;
    }
    RT_OK(rdmx_finalize(ctx));
    MPI_Request fin;  // matches the forger's: it answers our disconnects meanwhile
    MPI_Ibarrier(MPI_COMM_WORLD, &fin);
    MPI_Wait(&fin, MPI_STATUS_IGNORE);
    return bad;
}

}  // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int np = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    rt::g_rank = g_me;
    rt::g_test = "hostile_connect";
    RT_CHECK(np == 3, "needs exactly 3 processes");
    std::vector<DeviceChoice> ports = distinct_ports();
    int rc = 0;
    if (ports.size() < 2) {
        if (g_me == 0)
            std::printf("SKIP: needs two RDMA ports with different IPv4 addresses (found %zu): a forger on rank 0's "
                        "own address cannot be told apart by address\n", ports.size());
        rc = 77;
    } else if (g_me == kForger) {
        rc = run_forger(ports[1], np);
    } else {
        setenv("RDMX_DEVICE", ports[0].name.c_str(), 1);
        rc = run_rdmx(g_me, np);
    }
    int worst = 0;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    if (worst == 77) return 77;
    if (g_me == 0 && worst == 0)
        std::printf("hostile_connect: forgery during bring-up refused, mesh up; refusals logged at a bounded rate\n");
    return worst == 0 ? 0 : 1;
}
