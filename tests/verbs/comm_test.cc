// Communicators and the point-to-point calls that came with them, under
// mpirun: comm_test <case> [<case>...] [--count N]. The cases run in order in
// one job (--count N: cycles and mprobe messages; --reps N: threads). Cases:
//   split      rows and columns of a 2D grid of the job's ranks (and a split
//              ordered by a reversed key), everything checked on each
//   dup        a dup of the job and a dup of that
//   nested     a split of a split of a split
//   undefined  RDMX_UNDEFINED gives NULL; a bad colour is INVALID_ARG
//   threads    two communicators used at once from two threads (dups, then
//              a row and a column), and two created at once
//   isolation  wildcard receives and probes never see another communicator's messages
//   cycles     N dup/free (and split/free) cycles: no error, stats unchanged
//   stale      a message left unreceived on a freed communicator never reaches its id's next owner
//   free       comm_free of the root, of NULL and of a freed handle; requests outlive their communicator
//   local      local_rank/local_size against the members' node names
//   procnull   RDMX_PROC_NULL in send, recv, isend, irecv, sendrecv and the matched probe
//   sendrecv   ring shifts of each size, to oneself, and on a row communicator
//   mprobe     4 threads of rank 0 share one queue through mprobe/mrecv; improbe and imrecv
//   greq       generalized requests completed from another thread
//   abort      rank 1 calls rdmx_abort(ctx, 7) while the others wait (the job must end with 7)
//   abort_alone  the same on a communicator whose only member is rank 1
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include "comm_checks.h"

namespace {

rdmx_context_h world;
int me, np;
int g_count = 1000;
int g_reps = 10;

// The job's ranks as a rows x cols grid, rows <= cols, as square as np allows.
struct Grid {
    int rows = 1, cols = 1, row = 0, col = 0;
};
Grid grid_of(int n, int rank) {
    Grid g;
    for (int d = 1; d * d <= n; ++d)
        if (n % d == 0) g.rows = d;
    g.cols = n / g.rows;
    g.row = rank / g.cols;
    g.col = rank % g.cols;
    return g;
}

void expect_members(const ct::View &v, int size, int rank, const std::vector<int> &world_ranks) {
    RT_CHECK(v.n == size && v.r == rank, "%s: rank %d of %d, expected %d of %d", v.name, v.r, v.n, rank, size);
    for (int i = 0; i < size; ++i)
        RT_CHECK(v.w(i) == world_ranks[static_cast<size_t>(i)], "%s: member %d is job rank %d, expected %d", v.name, i,
                 v.w(i), world_ranks[static_cast<size_t>(i)]);
}

void free_comm(rdmx_context_h *c) {
    RT_OK(rdmx_comm_free(c));
    RT_CHECK(*c == nullptr, "rdmx_comm_free left the handle set");
}

void t_split() {
    const Grid g = grid_of(np, me);
    rdmx_context_h rowc = nullptr, colc = nullptr, revc = nullptr;
    RT_OK(rdmx_comm_split(world, g.row, g.col, &rowc));
    RT_OK(rdmx_comm_split(world, g.col, g.row, &colc));
    RT_OK(rdmx_comm_split(world, g.row, -g.col, &revc));  // the key alone orders the members
    std::vector<int> rw, cw, vw;
    for (int j = 0; j < g.cols; ++j) rw.push_back(g.row * g.cols + j);
    for (int i = 0; i < g.rows; ++i) cw.push_back(i * g.cols + g.col);
    for (int j = g.cols - 1; j >= 0; --j) vw.push_back(g.row * g.cols + j);
    const ct::View rv = ct::view_of(rowc, "row"), cv = ct::view_of(colc, "column"), vv = ct::view_of(revc, "reversed");
    expect_members(rv, g.cols, g.col, rw);
    expect_members(cv, g.rows, g.row, cw);
    expect_members(vv, g.cols, g.cols - 1 - g.col, vw);
    ct::check_all(rv);
    ct::check_all(cv);
    ct::check_all(vv);
    free_comm(&revc);
    free_comm(&colc);
    free_comm(&rowc);
}

void t_dup() {
    rdmx_context_h d = nullptr, dd = nullptr;
    RT_OK(rdmx_comm_dup(world, &d));
    RT_OK(rdmx_comm_dup(d, &dd));
    std::vector<int> all(static_cast<size_t>(np));
    for (int i = 0; i < np; ++i) all[static_cast<size_t>(i)] = i;
    const ct::View v = ct::view_of(d, "dup"), vv = ct::view_of(dd, "dup of dup");
    expect_members(v, np, me, all);
    expect_members(vv, np, me, all);
    ct::check_all(v);
    ct::check_all(vv);
    free_comm(&d);  // the parent first: a child does not depend on it
    ct::check_all(vv);
    free_comm(&dd);
    ct::check_all(ct::view_of(world, "job"));
}

// row -> ranks of one column parity within the row -> only that group's first member.
void t_nested() {
    const Grid g = grid_of(np, me);
    rdmx_context_h rowc = nullptr, par = nullptr, first = nullptr;
    RT_OK(rdmx_comm_split(world, g.row, 0, &rowc));
    RT_OK(rdmx_comm_split(rowc, g.col % 2, 0, &par));
    std::vector<int> pw;
    for (int j = g.col % 2; j < g.cols; j += 2) pw.push_back(g.row * g.cols + j);
    const ct::View pv = ct::view_of(par, "row parity");
    expect_members(pv, static_cast<int>(pw.size()), g.col / 2, pw);
    ct::check_all(pv);
    RT_OK(rdmx_comm_split(par, pv.r == 0 ? 5 : RDMX_UNDEFINED, 0, &first));
    RT_CHECK((first != nullptr) == (pv.r == 0), "nested: UNDEFINED gave %p on parity rank %d",
             static_cast<void *>(first), pv.r);
    if (first != nullptr) {
        const ct::View fv = ct::view_of(first, "parity leader");
        expect_members(fv, 1, 0, {g.row * g.cols + g.col % 2});
        ct::check_all(fv);
        free_comm(&first);
    }
    // The grandparent goes first; the others still work.
    free_comm(&rowc);
    ct::check_all(pv);
    free_comm(&par);
}

void t_undefined() {
    rdmx_context_h evens = reinterpret_cast<rdmx_context_h>(1);
    RT_OK(rdmx_comm_split(world, me % 2 == 0 ? 3 : RDMX_UNDEFINED, me, &evens));
    RT_CHECK((evens != nullptr) == (me % 2 == 0), "undefined: rank %d got %p", me, static_cast<void *>(evens));
    if (evens != nullptr) {
        std::vector<int> ew;
        for (int i = 0; i < np; i += 2) ew.push_back(i);
        const ct::View v = ct::view_of(evens, "even ranks");
        expect_members(v, (np + 1) / 2, me / 2, ew);
        ct::check_all(v);
        free_comm(&evens);
    }
    rdmx_context_h bad = nullptr;
    rdmx_status_t st = rdmx_comm_split(world, -5, 0, &bad);
    RT_CHECK(st == RDMX_ERR_INVALID_ARG, "split with colour -5 returned %d (%s)", st, rdmx_strerror(st));
    RT_CHECK(rdmx_comm_dup(world, nullptr) == RDMX_ERR_INVALID_ARG, "dup into NULL was accepted");
    RT_OK(rdmx_barrier(world));
}

// Two threads, each with its own communicator, run the whole check list
// `reps` times at once; then two threads each create a communicator at once.
void t_threads(int reps) {
    auto pair_run = [reps](rdmx_context_h a, const char *an, rdmx_context_h b, const char *bn) {
        auto body = [reps](rdmx_context_h c, const char *name) {
            const ct::View v = ct::view_of(c, name);
            for (int i = 0; i < reps; ++i) ct::check_all(v);
        };
        std::thread ta(body, a, an), tb(body, b, bn);
        ta.join();
        tb.join();
    };
    rdmx_context_h a = nullptr, b = nullptr;
    RT_OK(rdmx_comm_dup(world, &a));
    RT_OK(rdmx_comm_dup(world, &b));
    pair_run(a, "thread dup A", b, "thread dup B");
    const Grid g = grid_of(np, me);
    rdmx_context_h rowc = nullptr, colc = nullptr;
    RT_OK(rdmx_comm_split(world, g.row, g.col, &rowc));
    RT_OK(rdmx_comm_split(world, g.col, g.row, &colc));
    pair_run(rowc, "thread row", colc, "thread column");
    rdmx_context_h a2 = nullptr, b2 = nullptr;
    std::thread ca([&] { RT_OK(rdmx_comm_dup(a, &a2)); });
    std::thread cb([&] { RT_OK(rdmx_comm_split(b, me % 2, 0, &b2)); });
    ca.join();
    cb.join();
    pair_run(a2, "created at once A", b2, "created at once B");
    for (rdmx_context_h *c : {&a, &b, &rowc, &colc, &a2, &b2}) free_comm(c);
}

// The same tag on A and B, A's message already arrived: wildcards on B (and
// on the job's context) see only B's.
void t_isolation() {
    constexpr int kTag = 5;
    const int next = (me + 1) % np, prev = (me + np - 1) % np;
    rdmx_context_h a = nullptr, b = nullptr;
    RT_OK(rdmx_comm_dup(world, &a));
    RT_OK(rdmx_comm_dup(world, &b));
    const int va = 1000 + me, vb = 2000 + me;
    RT_OK(rdmx_send(a, &va, sizeof(va), next, kTag));
    rdmx_msg_info_t info{};
    RT_OK(rdmx_probe(a, RDMX_ANY_SOURCE, RDMX_ANY_TAG, &info));  // A's message is here
    RT_CHECK(info.source == prev && info.tag == kTag, "isolation: probe on A saw %d/%d", info.source, info.tag);
    int found = -1;
    rdmx_message_h msg = nullptr;
    RT_OK(rdmx_iprobe(b, RDMX_ANY_SOURCE, RDMX_ANY_TAG, &found, &info));
    RT_CHECK(found == 0, "isolation: iprobe(ANY, ANY) on B found A's message from %d", info.source);
    RT_OK(rdmx_iprobe(world, RDMX_ANY_SOURCE, RDMX_ANY_TAG, &found, &info));
    RT_CHECK(found == 0, "isolation: iprobe(ANY, ANY) on the job's context found A's message from %d", info.source);
    RT_OK(rdmx_improbe(b, RDMX_ANY_SOURCE, RDMX_ANY_TAG, &found, &msg, &info));
    RT_CHECK(found == 0, "isolation: improbe(ANY, ANY) on B matched A's message from %d", info.source);
    int got = -1, done = -1;
    rdmx_request_h r = nullptr;
    RT_OK(rdmx_irecv(b, &got, sizeof(got), RDMX_ANY_SOURCE, RDMX_ANY_TAG, &r));
    RT_CHECK(rdmx_test(&r, &done, &info) == RDMX_INPROGRESS && done == 0,
             "isolation: a wildcard receive on B completed with A's message (%d)", got);
    RT_OK(rdmx_barrier(world));
    RT_OK(rdmx_send(b, &vb, sizeof(vb), next, kTag));
    RT_OK(rdmx_wait(&r, &info));
    RT_CHECK(got == 2000 + prev && info.source == prev && info.tag == kTag, "isolation: B's wildcard got %d from %d",
             got, info.source);
    RT_OK(rdmx_recv(a, &got, sizeof(got), RDMX_ANY_SOURCE, RDMX_ANY_TAG, &info));
    RT_CHECK(got == 1000 + prev && info.source == prev, "isolation: A's wildcard got %d from %d", got, info.source);
    RT_OK(rdmx_barrier(world));
    free_comm(&a);
    free_comm(&b);
}

rdmx_stats_t stats_now() {
    rdmx_stats_t s;
    rdmx_stats_init(&s);
    RT_OK(rdmx_get_stats(world, &s));
    return s;
}

// Ids come back: far more cycles than there can be ids (a leak of ids ends
// in NO_MEMORY), used now and then, with the context's counters unchanged
// (ASan's leak check at exit covers the memory).
void t_cycles(int count) {
    const rdmx_stats_t before = stats_now();
    for (int i = 0; i < count; ++i) {
        rdmx_context_h c = nullptr;
        if (i % 2 == 0) RT_OK(rdmx_comm_dup(world, &c));
        else RT_OK(rdmx_comm_split(world, me % 2, -me, &c));
        RT_CHECK(c != nullptr, "cycle %d: no communicator", i);
        if (i % 100 == 0 || i == count - 1) {
            int64_t x = 1, s = 0;
            RT_OK(rdmx_allreduce(c, &x, &s, 1, RDMX_INT64, RDMX_SUM));
            const int64_t want = i % 2 == 0 ? np : (me % 2 == 0 ? (np + 1) / 2 : np / 2);
            RT_CHECK(s == want, "cycle %d: allreduce gave %lld, expected %lld", i, static_cast<long long>(s),
                     static_cast<long long>(want));
        }
        free_comm(&c);
    }
    const rdmx_stats_t after = stats_now();
    RT_CHECK(after.rcache_bytes == before.rcache_bytes && after.rcache_transient_bytes == before.rcache_transient_bytes,
             "after %d cycles: pinned bytes %zu -> %zu, transient %zu -> %zu", count, before.rcache_bytes,
             after.rcache_bytes, before.rcache_transient_bytes, after.rcache_transient_bytes);
    if (me == 0) std::printf("cycles: %d communicators created and freed\n", count);
}

// Rank r leaves a message on D unreceived (it has arrived: probed), D is
// freed, and the next communicator (likely with D's id again) must see none
// of it. Eager messages only: a rendezvous send nobody receives never
// completes (as in MPI, freeing a communicator does not cancel it).
void t_stale() {
    const int next = (me + 1) % np, prev = (me + np - 1) % np;
    for (int round = 0; round < 4; ++round) {
        rdmx_context_h d = nullptr;
        RT_OK(rdmx_comm_dup(world, &d));
        const uint64_t out = 0xABCD0000u + static_cast<uint64_t>(me);
        RT_OK(rdmx_send(d, &out, sizeof(out), next, 9));
        rdmx_msg_info_t info{};
        RT_OK(rdmx_probe(d, prev, 9, &info));
        free_comm(&d);
        RT_OK(rdmx_barrier(world));
        rdmx_context_h e = nullptr;
        RT_OK(round < 2 ? rdmx_comm_dup(world, &e) : rdmx_comm_split(world, 0, me, &e));
        int found = -1;
        RT_OK(rdmx_iprobe(e, RDMX_ANY_SOURCE, RDMX_ANY_TAG, &found, &info));
        RT_CHECK(found == 0,
                 "stale round %d: a new communicator sees the freed one's message (%zu bytes from %d, tag %d)", round,
                 info.length, info.source, info.tag);
        RT_OK(rdmx_barrier(world));  // every member has looked before anyone sends on E
        ct::check_p2p(ct::view_of(e, "after a stale message"));
        free_comm(&e);
        RT_OK(rdmx_barrier(world));
    }
}

void t_free() {
    rdmx_context_h w = world;
    rdmx_status_t st = rdmx_comm_free(&w);
    RT_CHECK(st == RDMX_ERR_INVALID_ARG && w == world, "comm_free of the root returned %d, handle %s", st,
             w == world ? "kept" : "changed");
    RT_CHECK(rdmx_comm_free(nullptr) == RDMX_ERR_INVALID_ARG, "comm_free(NULL) accepted");
    rdmx_context_h d = nullptr;
    RT_OK(rdmx_comm_dup(world, &d));
    rdmx_context_h copy = d;
    free_comm(&d);
    st = rdmx_comm_free(&d);
    RT_CHECK(st == RDMX_ERR_INVALID_ARG, "comm_free of a NULL handle returned %d", st);
    st = rdmx_comm_free(&copy);
    RT_CHECK(st == RDMX_ERR_INVALID_ARG, "comm_free of a freed handle returned %d", st);
    RT_CHECK(rdmx_rank(copy) == -1 && rdmx_size(copy) == -1 && rdmx_local_rank(copy) == -1 &&
                 rdmx_local_size(copy) == -1 && rdmx_comm_world_rank(copy, 0) == -1,
             "a freed handle still has rank %d size %d local %d/%d", rdmx_rank(copy), rdmx_size(copy),
             rdmx_local_rank(copy), rdmx_local_size(copy));
    int x = 0;
    st = rdmx_send(copy, &x, sizeof(x), 0, 1);
    RT_CHECK(st == RDMX_ERR_INVALID_ARG, "a send on a freed handle returned %d", st);
    RT_OK(rdmx_barrier(world));
    // Requests outlive their communicator: posted on D, D freed, then completed.
    const int next = (me + 1) % np, prev = (me + np - 1) % np;
    for (size_t len : {size_t{8}, ct::kRndvLen}) {
        RT_OK(rdmx_comm_dup(world, &d));
        std::vector<uint8_t> out(len), in(len);
        rt::fill(out, me, 12);
        rdmx_request_h q[2];
        RT_OK(rdmx_irecv(d, in.data(), len, prev, 12, &q[0]));
        RT_OK(rdmx_barrier(world));  // every receive is posted before any communicator is freed
        RT_OK(rdmx_isend(d, out.data(), len, next, 12, &q[1]));
        free_comm(&d);
        rdmx_msg_info_t info[2];
        RT_OK(rdmx_waitall(2, q, info));
        RT_CHECK(info[0].source == prev && info[0].length == len, "request after free: source %d length %zu",
                 info[0].source, info[0].length);
        RT_CHECK(rt::verify(in.data(), len, prev, 12, len) == SIZE_MAX, "request after free: payload wrong (len %zu)",
                 len);
        RT_OK(rdmx_barrier(world));
    }
}

// This process's node, as rdmx decides which ranks share memory: RDMX_NODE_ID
// when set (pretend nodes), else the host's name.
std::string node_name() {
    if (const char *id = std::getenv("RDMX_NODE_ID"); id != nullptr && *id != '\0') return id;
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    return host;
}

void check_local(rdmx_context_h c, const char *name) {
    constexpr size_t kName = 64;
    struct Entry {
        char node[kName];
        int lrank, lsize;
    } mine{}, none{};
    std::snprintf(mine.node, kName, "%s", node_name().c_str());
    mine.lrank = rdmx_local_rank(c);
    mine.lsize = rdmx_local_size(c);
    const int n = rdmx_size(c), r = rdmx_rank(c);
    std::vector<Entry> all(static_cast<size_t>(n), none);
    RT_OK(rdmx_allgather(c, &mine, sizeof(mine), all.data()));
    int lrank = 0, lsize = 0;
    for (int i = 0; i < n; ++i) {
        if (std::strcmp(all[static_cast<size_t>(i)].node, mine.node) != 0) continue;
        lsize++;
        if (i < r) lrank++;
    }
    RT_CHECK(mine.lrank == lrank && mine.lsize == lsize, "%s: local rank %d of %d, expected %d of %d (node %s)", name,
             mine.lrank, mine.lsize, lrank, lsize, mine.node);
    if (std::getenv("RDMX_NODE_ID") == nullptr)  // one host: everything is local
        RT_CHECK(n != np || (lsize == np && lrank == rdmx_comm_world_rank(c, r)), "%s: not all local on one host",
                 name);
}

void t_local() {
    check_local(world, "job");
    const Grid g = grid_of(np, me);
    rdmx_context_h d = nullptr, rowc = nullptr, colc = nullptr;
    RT_OK(rdmx_comm_dup(world, &d));
    RT_OK(rdmx_comm_split(world, g.row, -g.col, &rowc));
    RT_OK(rdmx_comm_split(world, g.col, g.row, &colc));
    check_local(d, "dup");
    check_local(rowc, "row (reversed)");
    check_local(colc, "column");
    RT_CHECK(rdmx_comm_world_rank(rowc, rdmx_rank(rowc)) == me && rdmx_comm_world_rank(colc, rdmx_rank(colc)) == me,
             "local: comm_world_rank of my own rank is not my job rank");
    for (rdmx_context_h *c : {&d, &rowc, &colc}) free_comm(c);
}

}  // namespace

// The remaining cases live in comm_test_p2p.cc.
void comm_p2p_case(const std::string &which, rdmx_context_h ctx, int count);

int main(int argc, char **argv) {
    std::vector<std::string> cases;
    for (int i = 1; i < argc; ++i) {
        if (std::string(argv[i]) == "--count" && i + 1 < argc) g_count = std::atoi(argv[++i]);
        else if (std::string(argv[i]) == "--reps" && i + 1 < argc) g_reps = std::atoi(argv[++i]);
        else cases.emplace_back(argv[i]);
    }
    if (cases.empty()) cases = {"split", "dup", "nested", "undefined"};
    rt::g_test = argv[1] != nullptr ? argv[1] : "split";
    // Cases with threads of their own need the multiple level whatever the
    // suite runs with (the config field wins over RDMX_THREADS).
    rdmx_config_t cfg;
    rdmx_config_init(&cfg);
    for (const std::string &c : cases)
        if (c == "threads" || c == "mprobe" || c == "greq") cfg.threads = RDMX_THREADS_MULTIPLE;
    world = rt::init_or_skip(&cfg);
    me = rdmx_rank(world);
    np = rdmx_size(world);
    const char *shrink = std::getenv("RDMX_TEST_SHRINK");  // the sanitizer runs: fewer repetitions
    const int div = shrink != nullptr && std::atoi(shrink) > 1 ? std::atoi(shrink) : 1;
    for (const std::string &c : cases) {
        rt::g_test = c.c_str();
        if (c == "split") t_split();
        else if (c == "dup") t_dup();
        else if (c == "nested") t_nested();
        else if (c == "undefined") t_undefined();
        else if (c == "threads") t_threads(std::max(2, g_reps / div));
        else if (c == "isolation") t_isolation();
        else if (c == "cycles") t_cycles(g_count);
        else if (c == "stale") t_stale();
        else if (c == "free") t_free();
        else if (c == "local") t_local();
        else comm_p2p_case(c, world, std::max(g_count / div, 50));
        if (me == 0) std::printf("comm_test %s: OK on %d ranks\n", c.c_str(), np);
    }
    RT_OK(rdmx_finalize(world));
    return 0;
}
