/* The UCX reference for icount_pingpong.c: the same 8-byte ping-pong,
 * written on UCP's tag API (ucp_tag_send_nbx / ucp_tag_recv_nbx, a worker in
 * UCS_THREAD_MODE_SINGLE, or UCS_THREAD_MODE_MULTI with "multi" as third
 * argument, beside rdmx's RDMX_THREADS=multiple), counted the same way:
 * rank 0 under callgrind with collection on only around its UCP calls, and
 * the wait for the pong begun only once rank 1 says (through FLAG_FILE) that
 * it has posted it. Run it with UCX_TLS=posix,self (UCX's shared-memory
 * transport) to set it beside rdmx's sm, or rc_v,self beside rdmx's rc.
 * The two ranks find each other through files next to FLAG_FILE
 * (FLAG_FILE.addr0/.addr1: their worker addresses); the rank comes from
 * OMPI_COMM_WORLD_RANK (mpirun launches both).
 *
 * Usage: icount_ucx ITERS FLAG_FILE [single|multi] */
#define _POSIX_C_SOURCE 200809L
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucp/api/ucp.h>
#include <unistd.h>
#include <valgrind/callgrind.h>

#include "icount_flag.h"

enum { kMsg = 8 };
static const ucp_tag_t kTag = 7;
/* Rank 0 runs under callgrind: in an emulated guest its UCX start-up over
 * rc_v alone takes minutes, and rank 1, started beside it, waits that long
 * for its address (and as long at the end, for rank 0's close). The waits
 * are timed by the clock, not by counting naps (a 1 ms nap lasts several
 * under emulation); the script's timeout bounds the whole run anyway. */
static const double kPeerWaitSeconds = 900.0;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void die(const char *what, ucs_status_t st) {
    fprintf(stderr, "icount_ucx: %s: %s\n", what, ucs_status_string(st));
    exit(1);
}

static void put_addr(const char *flag, int me, const void *addr, size_t len) {
    char tmp[4096], name[4096];
    snprintf(tmp, sizeof(tmp), "%s.addr%d.tmp", flag, me);
    snprintf(name, sizeof(name), "%s.addr%d", flag, me);
    FILE *f = fopen(tmp, "wb");
    if (f == NULL || fwrite(addr, 1, len, f) != len || fclose(f) != 0 || rename(tmp, name) != 0) {
        perror(tmp);
        exit(2);
    }
}

/* The peer's worker address, once its file appears (bounded wait). */
static void *get_addr(const char *flag, int peer) {
    char name[4096];
    snprintf(name, sizeof(name), "%s.addr%d", flag, peer);
    struct timespec nap = {0, 1000000};
    for (const double deadline = now_s() + kPeerWaitSeconds; now_s() < deadline;) {
        FILE *f = fopen(name, "rb");
        if (f != NULL) {
            static char buf[65536];
            size_t n = fread(buf, 1, sizeof(buf), f);
            fclose(f);
            if (n > 0) return buf;
        }
        nanosleep(&nap, NULL);
    }
    fprintf(stderr, "icount_ucx: no worker address from rank %d after %.0f s (%s)\n", peer, kPeerWaitSeconds, name);
    exit(1);
}

static void wait_req(ucp_worker_h w, void *req, const char *what) {
    if (req == NULL) return;
    if (UCS_PTR_IS_ERR(req)) die(what, UCS_PTR_STATUS(req));
    ucs_status_t st;
    while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS) ucp_worker_progress(w);
    ucp_request_free(req);
    if (st != UCS_OK) die(what, st);
}

static void ping(ucp_worker_h w, ucp_ep_h ep, long i, _Atomic uint64_t *posted, int phase) {
    const int counted = phase == ICOUNT_PHASE_COUNTED;
    char out[kMsg] = {(char)i, (char)phase}, in[kMsg] = {0};
    ucp_request_param_t prm = {0};
    if (counted) CALLGRIND_TOGGLE_COLLECT;
    wait_req(w, ucp_tag_send_nbx(ep, out, kMsg, kTag, &prm), "send");
    void *r = ucp_tag_recv_nbx(w, in, kMsg, kTag, (ucp_tag_t)-1, &prm);
    if (counted) CALLGRIND_TOGGLE_COLLECT;
    icount_wait_posted(posted, i);
    if (counted) CALLGRIND_TOGGLE_COLLECT;
    wait_req(w, r, "recv");
    if (counted) CALLGRIND_TOGGLE_COLLECT;
    if (in[0] != (char)i) {
        fprintf(stderr, "icount_ucx: pong %ld carried %d\n", i, in[0]);
        exit(1);
    }
}

/* Echoes ping `i`; returns its phase. */
static int pong(ucp_worker_h w, ucp_ep_h ep, long i, _Atomic uint64_t *posted) {
    char buf[kMsg];
    ucp_request_param_t prm = {0};
    wait_req(w, ucp_tag_recv_nbx(w, buf, kMsg, kTag, (ucp_tag_t)-1, &prm), "recv");
    wait_req(w, ucp_tag_send_nbx(ep, buf, kMsg, kTag, &prm), "send");
    icount_set_posted(posted, i);
    return buf[1];
}

int main(int argc, char **argv) {
    long iters = argc > 2 ? atol(argv[1]) : 0;
    const char *rank_env = getenv("OMPI_COMM_WORLD_RANK");
    const char *mode = argc > 3 ? argv[3] : "single";
    const int multi = strcmp(mode, "multi") == 0;
    if (iters <= 0 || rank_env == NULL || (!multi && strcmp(mode, "single") != 0)) {
        fprintf(stderr, "usage: icount_ucx ITERS FLAG_FILE [single|multi] (under mpirun, 2 ranks)\n");
        return 2;
    }
    const int me = atoi(rank_env);
    _Atomic uint64_t *posted = icount_map_flag(argv[2]);
    ucp_params_t pp = {0};
    pp.field_mask = UCP_PARAM_FIELD_FEATURES;
    pp.features = UCP_FEATURE_TAG;
    ucp_context_h uc;
    ucs_status_t st = ucp_init(&pp, NULL, &uc);
    if (st != UCS_OK) die("ucp_init", st);
    ucp_worker_params_t wp = {0};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = multi ? UCS_THREAD_MODE_MULTI : UCS_THREAD_MODE_SINGLE;
    ucp_worker_h w;
    if ((st = ucp_worker_create(uc, &wp, &w)) != UCS_OK) die("ucp_worker_create", st);
    ucp_address_t *addr;
    size_t addr_len;
    if ((st = ucp_worker_get_address(w, &addr, &addr_len)) != UCS_OK) die("ucp_worker_get_address", st);
    put_addr(argv[2], me, addr, addr_len);
    ucp_ep_params_t ep_p = {0};
    ep_p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep_p.address = (const ucp_address_t *)get_addr(argv[2], 1 - me);
    ucp_ep_h ep;
    if ((st = ucp_ep_create(w, &ep_p, &ep)) != UCS_OK) die("ucp_ep_create", st);
    long i = 0;  /* counted from 0 over the warm-up and the counted pings (icount_flag.h) */
    if (me == 0) {
        const long long t0 = icount_mono_ns();
        for (int phase = ICOUNT_PHASE_WARM; phase != ICOUNT_PHASE_LAST_WARM; ++i) {
            phase = icount_warm_phase(i, t0);
            ping(w, ep, i, posted, phase);
        }
        CALLGRIND_START_INSTRUMENTATION; /* icount.sh runs callgrind with --instr-atstart=no */
        for (long n = 0; n < iters; ++n, ++i) ping(w, ep, i, posted, ICOUNT_PHASE_COUNTED);
    } else {
        for (long left = -1; left != 0; ++i) left = icount_pongs_left(left, pong(w, ep, i, posted), iters);
    }
    /* A flushing close, with both ranks still there: over rc_v it needs the
     * peer (rank 0's spun until the script's timeout once rank 1 had
     * exited after its last pong). Rank 1 keeps progressing until rank 0
     * says, through the flag, that its close is done. (A forced close would
     * need UCP_ERR_HANDLING_MODE_PEER endpoints.) */
    ucp_request_param_t cp = {0};
    wait_req(w, ucp_ep_close_nbx(ep, &cp), "ep close");
    if (me == 0) {
        icount_set_closed(posted);
    } else {
        const double deadline = now_s() + kPeerWaitSeconds;
        while (!icount_closed(posted)) {
            ucp_worker_progress(w);
            if (now_s() > deadline) {
                fprintf(stderr, "icount_ucx: rank 0 did not close its endpoint within %.0f s\n", kPeerWaitSeconds);
                exit(1);
            }
        }
    }
    ucp_worker_release_address(w, addr);
    ucp_worker_destroy(w);
    ucp_cleanup(uc);
    if (me == 0) printf("%ld\n", iters);
    return 0;
}
