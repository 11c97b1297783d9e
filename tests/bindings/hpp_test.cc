// The C++ layer's communicator and point-to-point calls, under mpirun:
// hpp_test <case>. Cases: comm (split, dup, free, views, local rank/size),
// p2p (sendrecv, PROC_NULL, separate message spaces, truncation), mprobe
// (Message, improbe, four threads on one queue), greq (generalized requests,
// progress hooks and per-communicator values), abort (rank size-1 ends the job with status 3: the
// test expects the job to fail). The new collectives are hpp_coll_test's.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <numeric>
#include <thread>
#include <type_traits>
#include <vector>

#include "bind_check.h"

namespace {

// What the layer promises at compile time: owners move but never copy,
// views copy.
static_assert(!std::is_copy_constructible_v<rdmx::Communicator> && std::is_nothrow_move_constructible_v<rdmx::Communicator>);
static_assert(!std::is_copy_assignable_v<rdmx::Communicator> && std::is_nothrow_move_assignable_v<rdmx::Communicator>);
static_assert(!std::is_copy_constructible_v<rdmx::Message> && std::is_nothrow_move_constructible_v<rdmx::Message>);
static_assert(!std::is_copy_constructible_v<rdmx::ProgressHook> && std::is_nothrow_move_constructible_v<rdmx::ProgressHook>);
static_assert(std::is_copy_constructible_v<rdmx::CommRef> && std::is_convertible_v<rdmx::Context &, rdmx::CommRef>);
static_assert(std::is_convertible_v<rdmx::Communicator &, rdmx::CommRef>);

constexpr int kDupCycles = 200;     // dup/free rounds: communicator ids must be reused
constexpr int kProbeThreads = 4;    // threads sharing one matched-probe queue
constexpr int kProbeMsgs = 200;     // messages each other rank sends to that queue
constexpr int kAbortCode = 3;

// A grid of `cols` columns: the process grid the row/column splits model.
int grid_cols(int np) { return np % 2 == 0 ? 2 : 1; }

// local_rank/local_size are consistent with each other and sum to size()
// over the ranks that lead their node.
void check_locality(rdmx::CommRef c, const char *what) {
    const int lr = c.local_rank(), ls = c.local_size();
    BT_CHECK(lr >= 0 && lr < ls && ls <= c.size(), "%s: local rank %d of %d, size %d", what, lr, ls, c.size());
    const int leaders_sum = c.allreduce(lr == 0 ? ls : 0, RDMX_SUM);
    BT_CHECK(leaders_sum == c.size(), "%s: node sizes add up to %d, size %d", what, leaders_sum, c.size());
}

// Every member's world rank, gathered on the communicator, equals what
// world_rank() says.
void check_members(rdmx::CommRef c, int me_world, const char *what) {
    std::vector<int> mine{me_world};
    std::vector<int> all(static_cast<size_t>(c.size()));
    c.allgather(std::span(mine), std::span(all));
    for (int r = 0; r < c.size(); ++r)
        BT_CHECK(all[static_cast<size_t>(r)] == c.world_rank(r), "%s: member %d is world %d, world_rank says %d",
                 what, r, all[static_cast<size_t>(r)], c.world_rank(r));
    BT_CHECK(c.world_rank(-1) == -1 && c.world_rank(c.size()) == -1, "%s: world_rank out of range", what);
}

void t_comm(rdmx::Context &ctx) {
    const int me = ctx.rank(), np = ctx.size();
    const int cols = grid_cols(np), rows = np / cols, my_row = me / cols, my_col = me % cols;

    rdmx::Communicator row = ctx.split(my_row, my_col);
    BT_CHECK(row && row.size() == cols && row.rank() == my_col, "row: rank %d of %d", row.rank(), row.size());
    for (int c = 0; c < cols; ++c) BT_CHECK(row.world_rank(c) == my_row * cols + c, "row member %d", c);
    // Columns ordered by a descending key: the bottom row comes first.
    rdmx::Communicator col = ctx.split(my_col, -me);
    BT_CHECK(col.size() == rows && col.rank() == rows - 1 - my_row, "col: rank %d of %d", col.rank(), col.size());
    check_members(row, me, "row");
    check_members(col, me, "col");
    const int row_sum = row.allreduce(me, RDMX_SUM);
    BT_CHECK(row_sum == my_row * cols * cols + cols * (cols - 1) / 2, "row sum %d", row_sum);

    rdmx::Communicator none = ctx.split(me == 0 ? RDMX_UNDEFINED : 0, 0);
    BT_CHECK(me == 0 ? !none : (none.size() == np - 1 && none.rank() == me - 1), "UNDEFINED: size %d",
             none ? none.size() : -1);

    rdmx::Communicator d = ctx.dup();
    BT_CHECK(d.size() == np && d.rank() == me, "dup: rank %d of %d", d.rank(), d.size());
    rdmx::Communicator nested = d.split(me % 2, me);   // a split of a dup
    BT_CHECK(nested.size() == (np + 1 - me % 2) / 2 && nested.rank() == me / 2, "nested: rank %d of %d",
             nested.rank(), nested.size());
    check_members(nested, me, "nested");
    rdmx::Communicator rowdup = row.dup();             // a dup of a split
    check_members(rowdup, me, "row dup");
    check_locality(ctx, "ctx");
    check_locality(row, "row");

    // Ownership moves; a CommRef is a view of its owner.
    rdmx::CommRef view = d;
    BT_CHECK(view.native_handle() == d.native_handle(), "view");
    rdmx::Communicator moved = std::move(d);
    BT_CHECK(!d && moved && moved.native_handle() == view.native_handle(), "move");
    moved = std::move(rowdup);   // frees the dup, takes the row's dup
    BT_CHECK(!rowdup && moved.size() == cols, "move assignment");
    moved.free();
    BT_CHECK(!moved, "free");
    moved.free();                // an empty Communicator: nothing to do

    for (int i = 0; i < kDupCycles; ++i) {
        rdmx::Communicator c = ctx.dup();
        c.barrier();
    }
    ctx.barrier();
}

void t_p2p(rdmx::Context &ctx) {
    const int me = ctx.rank(), np = ctx.size();
    const int right = (me + 1) % np, left = (me + np - 1) % np;

    // A periodic ring shift on the job and on a dup of it.
    rdmx::Communicator d = ctx.dup();
    for (rdmx::CommRef c : {rdmx::CommRef(ctx), rdmx::CommRef(d)}) {
        std::vector<int> out{me, -me}, in{-7, -7};
        rdmx_msg_info_t info = c.sendrecv(std::span(out), right, 4, std::span(in), left, 4);
        BT_CHECK(in[0] == left && in[1] == -left, "ring: got %d %d from %d", in[0], in[1], left);
        BT_CHECK(info.source == left && info.tag == 4 && info.length == sizeof(int) * 2, "ring info %d %d %zu",
                 info.source, info.tag, info.length);
    }

    // A chain, not a ring: the ends exchange with RDMX_PROC_NULL.
    const int up = me == np - 1 ? RDMX_PROC_NULL : me + 1, down = me == 0 ? RDMX_PROC_NULL : me - 1;
    std::vector<double> edge{me + 0.5}, halo{-1.0};
    rdmx_msg_info_t info = ctx.sendrecv(std::span(edge), up, 6, std::span(halo), down, 6);
    if (down == RDMX_PROC_NULL)
        BT_CHECK(info.source == RDMX_PROC_NULL && info.length == 0 && halo[0] == -1.0, "chain end: src %d len %zu",
                 info.source, info.length);
    else
        BT_CHECK(info.source == down && halo[0] == down + 0.5, "chain: %g from %d", halo[0], info.source);

    // PROC_NULL in send, recv, isend and irecv: nothing moves.
    std::vector<int> buf{42};
    ctx.send(std::span(buf), RDMX_PROC_NULL, 1);
    info = ctx.recv(std::span(buf), RDMX_PROC_NULL, 1);
    BT_CHECK(info.source == RDMX_PROC_NULL && info.length == 0 && buf[0] == 42, "recv PROC_NULL");
    rdmx::Request s = ctx.isend(std::span(buf), RDMX_PROC_NULL, 1);
    rdmx::Request r = ctx.irecv(std::span(buf), RDMX_PROC_NULL, 1);
    BT_CHECK(s.wait() == RDMX_OK, "isend PROC_NULL");
    info = r.get();
    BT_CHECK(info.source == RDMX_PROC_NULL && info.length == 0 && buf[0] == 42, "irecv PROC_NULL");

    // Messages never cross communicators: the same tag on ctx and on d, and
    // wildcards on d first see only d's.
    if (np >= 2 && me < 2) {
        const int peer = 1 - me;
        std::vector<int> on_ctx{100 + me}, on_d{200 + me}, got{0};
        rdmx::Request a = ctx.isend(std::span(on_ctx), peer, 9);
        rdmx::Request b = d.isend(std::span(on_d), peer, 9);
        info = d.recv(std::span(got));
        BT_CHECK(got[0] == 200 + peer && info.source == peer && info.tag == 9, "wildcard on dup got %d", got[0]);
        info = ctx.recv(std::span(got), RDMX_ANY_SOURCE, RDMX_ANY_TAG);
        BT_CHECK(got[0] == 100 + peer, "wildcard on ctx got %d", got[0]);
        BT_CHECK(a.wait() == RDMX_OK && b.wait() == RDMX_OK, "sends");
    }
    ctx.barrier();   // no other message may reach those wildcard receives

    // Truncation in sendrecv is an Error that carries the length sent.
    std::vector<int> big(8, me), small(2, -1);
    try {
        (void)ctx.sendrecv(std::span(big), right, 11, std::span(small), left, 11);
        BT_CHECK(false, "sendrecv into a short buffer did not throw");
    } catch (const rdmx::Error &e) {
        BT_CHECK(e.status() == RDMX_ERR_TRUNCATE && e.info().length == sizeof(int) * 8, "truncate: %s, length %zu",
                 e.what(), e.info().length);
        BT_CHECK(small[0] == left && small[1] == left, "truncated data %d %d", small[0], small[1]);
    }
    ctx.barrier();
}

// Four threads take messages off one queue with mprobe: each is received
// exactly once. The thread that receives the last one sends each thread a
// "stop" message (value -1) so none blocks forever.
void probe_threads(rdmx::Context &ctx) {
    const int me = ctx.rank(), np = ctx.size();
    const int tag = 20;
    if (me != 0) {
        std::vector<rdmx::Request> sends;
        std::vector<int> vals(kProbeMsgs);
        for (int i = 0; i < kProbeMsgs; ++i) {
            vals[static_cast<size_t>(i)] = me * kProbeMsgs + i;
            sends.push_back(ctx.isend(std::span(&vals[static_cast<size_t>(i)], 1), 0, tag));
        }
        rdmx::wait_all(sends);
        return;
    }
    const int total = (np - 1) * kProbeMsgs;
    std::vector<std::atomic<int>> seen(static_cast<size_t>(np * kProbeMsgs));
    std::atomic<int> received{0};
    const std::vector<int> stop(kProbeThreads, -1);
    std::vector<rdmx::Request> stops;
    std::atomic<int> bad{0};
    auto worker = [&] {
        for (;;) {
            rdmx::Message m = ctx.mprobe(RDMX_ANY_SOURCE, tag);
            std::vector<int> v(m.info().length / sizeof(int));
            rdmx_msg_info_t info = m.recv(std::span(v));
            if (v.size() != 1 || info.length != sizeof(int)) { bad++; return; }
            if (v[0] < 0) return;
            if (v[0] >= np * kProbeMsgs || seen[static_cast<size_t>(v[0])]++ != 0) bad++;
            if (++received == total) {
                for (int t = 0; t < kProbeThreads; ++t)
                    stops.push_back(ctx.isend(std::span(&stop[static_cast<size_t>(t)], 1), 0, tag));
            }
        }
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < kProbeThreads; ++t) threads.emplace_back(worker);
    for (auto &t : threads) t.join();
    rdmx::wait_all(stops);
    BT_CHECK(bad == 0 && received == total, "threads: %d received of %d, %d bad", received.load(), total, bad.load());
}

void t_mprobe(rdmx::Context &ctx) {
    const int me = ctx.rank(), np = ctx.size();
    const int right = (me + 1) % np, left = (me + np - 1) % np;
    std::vector<char> a(10, static_cast<char>('a' + me % 26)), b(3000, static_cast<char>('A' + me % 26));
    std::vector<char> c(5, 'z');
    rdmx::Request sa = ctx.isend(std::span(a), right, 10);
    rdmx::Request sb = ctx.isend(std::span(b), right, 11);
    rdmx::Request sc = ctx.isend(std::span(c), right, 12);

    // Received in the reverse order of sending, each into a buffer sized from the probe.
    rdmx::Message mb = ctx.mprobe(left, 11);
    BT_CHECK(mb.pending() && mb.info().source == left && mb.info().tag == 11 && mb.info().length == 3000,
             "mprobe info %d %d %zu", mb.info().source, mb.info().tag, mb.info().length);
    std::vector<char> gb(mb.info().length);
    rdmx_msg_info_t info = mb.recv(std::span(gb));
    BT_CHECK(!mb.pending() && info.length == 3000 && gb[2999] == static_cast<char>('A' + left % 26), "mrecv");

    std::optional<rdmx::Message> ma;
    while (!(ma = ctx.improbe(left, 10))) ctx.progress();
    std::vector<char> ga(ma->info().length);
    rdmx::Request ra = ma->irecv(std::span(ga));
    info = ra.get();
    BT_CHECK(info.length == 10 && ga[0] == static_cast<char>('a' + left % 26), "imrecv");
    BT_CHECK(!ctx.improbe(left, 999), "improbe found a message never sent");

    // A Message dropped unreceived is consumed: no probe sees it again.
    { rdmx::Message mc = ctx.mprobe(left, 12); }
    BT_CHECK(!ctx.iprobe(left, 12), "a dropped message is still there");

    // PROC_NULL: an empty message that receives as PROC_NULL.
    rdmx::Message mn = ctx.mprobe(RDMX_PROC_NULL, 0);
    std::vector<char> gn(4, 'q');
    info = mn.recv(std::span(gn));
    BT_CHECK(!mn.pending() && info.source == RDMX_PROC_NULL && info.length == 0 && gn[0] == 'q', "mprobe PROC_NULL");

    BT_CHECK(sa.wait() == RDMX_OK && sb.wait() == RDMX_OK && sc.wait() == RDMX_OK, "sends");
    ctx.barrier();
    if (np > 1) probe_threads(ctx);
    ctx.barrier();
}

struct HookState {
    std::atomic<int> calls{0};
    std::atomic<rdmx_request_h> pending{nullptr};   // completed by the hook, once
    std::atomic<int> complete_status{RDMX_OK};
};

// A progress callback that completes a generalized request on its third
// call: how a layer above rdmx finishes operations of its own. It calls the
// C function: no exception may cross the engine that calls it.
int hook_fn(void *arg) {
    auto *st = static_cast<HookState *>(arg);
    if (++st->calls >= 3) {
        rdmx_request_h h = st->pending.exchange(nullptr);
        if (h != nullptr) {
            st->complete_status = rdmx_greq_complete(h, RDMX_OK);
            return 1;
        }
    }
    return 0;
}

void t_greq(rdmx::Context &ctx) {
    // Completed from another thread, with a status the wait returns.
    rdmx::Request r = ctx.greq_start();
    BT_CHECK(r.pending(), "greq_start gave no request");
    std::thread t([h = r.native_handle()] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        rdmx::greq_complete(h, RDMX_ERR_CANCELED);
    });
    rdmx_msg_info_t info{};
    rdmx_status_t st = r.wait(&info);
    t.join();
    BT_CHECK(st == RDMX_ERR_CANCELED && !r.pending(), "greq wait returned %d", st);
    BT_CHECK(info.source == RDMX_PROC_NULL && info.length == 0, "greq info %d %zu", info.source, info.length);

    // Completed by a progress hook, in whichever thread drives progress.
    static HookState hs;   // static: outlives any callback still running as the hook goes
    rdmx::Request g = ctx.greq_start();
    hs.pending = g.native_handle();
    rdmx::ProgressHook hook = ctx.on_progress(hook_fn, &hs);
    BT_CHECK(static_cast<bool>(hook), "hook not registered");
    st = g.wait();
    BT_CHECK(st == RDMX_OK && hs.calls >= 3 && hs.complete_status == RDMX_OK, "greq by hook: %d after %d calls (%d)",
             st, hs.calls.load(), hs.complete_status.load());
    rdmx::ProgressHook moved = std::move(hook);
    BT_CHECK(!hook && moved, "hook move");
    moved.reset();
    BT_CHECK(!moved, "hook reset");
    ctx.barrier();
}

int g_attr_freed = 0;
void count_free(void *value) {
    if (value != nullptr) g_attr_freed += *static_cast<int *>(value);
}

// Per-communicator values: set, get, replaced (the old one freed) and freed
// with their communicator.
void t_attr(rdmx::Context &ctx) {
    const int key = rdmx::attr_key_create();
    BT_CHECK(ctx.attr_get(key) == nullptr, "a new key has a value");
    static int one = 1, ten = 10, hundred = 100;
    ctx.attr_set(key, &one, count_free);
    BT_CHECK(ctx.attr_get(key) == &one, "attr_get");
    ctx.attr_set(key, &ten, count_free);   // frees `one`
    BT_CHECK(g_attr_freed == 1 && ctx.attr_get(key) == &ten, "replaced: freed %d", g_attr_freed);
    {
        rdmx::Communicator d = ctx.dup();
        d.attr_set(key, &hundred, count_free);
    }   // ~Communicator frees `hundred`
    BT_CHECK(g_attr_freed == 101, "freed with the communicator: %d", g_attr_freed);
    ctx.attr_set(key, nullptr, nullptr);   // frees `ten`
    BT_CHECK(g_attr_freed == 111, "cleared: %d", g_attr_freed);
}

// Rank size-1 aborts while the others wait for a message that never comes.
void t_abort(rdmx::Context &ctx) {
    if (ctx.rank() == ctx.size() - 1) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        ctx.abort(kAbortCode);
    }
    std::vector<int> never(1);
    (void)ctx.recv(std::span(never), ctx.size() - 1, 77);
    BT_CHECK(false, "rank %d returned from a receive the aborting rank never sent", ctx.rank());
}

}  // namespace

int main(int argc, char **argv) {
    bt::g_case = argc > 1 ? argv[1] : "comm";
    rdmx_config_t cfg = rdmx::Context::default_config();
    cfg.threads = RDMX_THREADS_MULTIPLE;   // greq and mprobe call from several threads
    rdmx::Context ctx = bt::open_or_skip(cfg);
    const std::string &which = bt::g_case;
    int rc = bt::run_case([&] {
        if (which == "comm") t_comm(ctx);
        else if (which == "p2p") t_p2p(ctx);
        else if (which == "mprobe") t_mprobe(ctx);
        else if (which == "greq") { t_greq(ctx); t_attr(ctx); }
        else if (which == "abort") t_abort(ctx);
        else BT_CHECK(false, "unknown case %s", which.c_str());
    });
    if (rc != 0) return rc;
    const int me = ctx.rank(), np = ctx.size();
    ctx.finalize();
    if (me == 0) std::printf("hpp_test %s: OK on %d ranks\n", which.c_str(), np);
    return 0;
}
