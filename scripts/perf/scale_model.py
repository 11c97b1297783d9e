#!/usr/bin/env python3
"""The scale model of docs/scale.md: per-process memory, QPs per node and
connection set-ups per process for each connection scheme at 1k, 10k and
100k ranks (64 per node). Every input names where it comes from; docs/scale.md
explains them. Prints the markdown tables the document carries.

Usage: scripts/perf/scale_model.py [--ppn 64] [--t-qp-ms 0.1]
"""
import argparse
import math

MIB = 1 << 20

# rdmx today (derived from the code; see docs/scale.md, "Per-peer costs").
EAGER_LIMIT = 8192             # core/config.h Config::eager_limit
MSG_HDR = 40                   # core/wire.h MsgHdr
BUF = (EAGER_LIMIT + MSG_HDR + 63) // 64 * 64   # transport/memory.cc Slab::init stride: 8256
SRQ_WANT = 512                 # core/config.h Config::srq_depth
MAX_CREDITS = 64               # core/wire.h kMaxCredits
SQ_WANT, SQ_MIN = 128, 32      # core/config.h kSqDepthWanted, kMinSqDepth
SEND_BUFS = 512                # transport/rc_transport.cc kSendBufs
CREDIT_SLOT = 64               # transport/memory.h CreditSlots::kStride
HOST_PER_PEER = 368 + 40 * SQ_WANT + 128   # sizeof Endpoint + SqSlot ring + Peer (this build)
HOST_PER_RANK = 128 + 368 + 64 + 16 + 4    # Peer, Endpoint, credit slot, address, keepalive mark
BOOT_PER_RANK = 96 + 16        # protocols/boot_record.h BootRecord + RcRecord
# Provider and device (sourced or derived; see the document).
SQ_WQE = 320                   # mlx5: ALIGN(48 + 4 + 256 inline, 64)
CQE = 64                       # mlx5 CQE
MAX_SRQ_WR = 32767             # ConnectX-6 Dx, ibv_devinfo -vv
MAX_CQE = 4194303              # ConnectX-6 Dx
MAX_QP = 131072                # ConnectX-6 Dx
UD_RECV = 4096                 # UD: one receive buffer per MTU-sized datagram
DCI = 32                       # UCX UCX_DC_MLX5_NUM_DCI (recent releases)


def pow2_roundup(x):
    return 1 << (x - 1).bit_length()


def sq_bytes(depth):
    """Provider send-queue buffer of one RC QP (mlx5_calc_sq_size)."""
    return pow2_roundup(depth * SQ_WQE)


def plan(npeers, max_srq_wr=MAX_SRQ_WR, max_cqe=MAX_CQE):
    """core/config.cc plan_queues: (credits, srq depth, sq depth, cqe) or None."""
    n = max(npeers, 1)
    slack = 16 + npeers
    cap = max_srq_wr - 1
    credits = min(max(SRQ_WANT // n, 8), MAX_CREDITS)
    if credits * n + slack > cap:
        credits = (cap - slack) // n if cap > slack else 0
    if credits < 2:
        return None
    depth = max(credits * n + slack, min(SRQ_WANT, cap))
    sq = SQ_WANT
    while sq > SQ_MIN and depth + n * sq + 64 > max_cqe:
        sq //= 2
    if depth + n * sq + 64 > max_cqe:
        return None
    return credits, depth, sq, depth + n * sq + 64


def rc_process(nranks, qps, sized_peers, table_ranks):
    """Pinned and host bytes of one process with `qps` RC QPs, queues sized
    for `sized_peers` peers and per-rank tables of `table_ranks` entries."""
    q = plan(sized_peers)
    if q is None:
        return None
    _, depth, sq, cqe = q
    pinned = depth * BUF + SEND_BUFS * BUF + table_ranks * CREDIT_SLOT + qps * sq_bytes(sq) + cqe * CQE
    host = qps * HOST_PER_PEER + table_ranks * HOST_PER_RANK + nranks * BOOT_PER_RANK
    return pinned, host


def schemes(nranks, ppn):
    nodes = nranks // ppn
    off = nranks - ppn
    k_log = math.ceil(math.log2(nranks))
    rows = []
    # (name, per-process (pinned, host) or None, QPs per process, QPs per node, set-ups per process)
    rows.append(("mesh RC (rdmx today)", rc_process(nranks, off, nranks - 1, nranks), off, ppn * off, off))
    for k, label in ((6, "6"), (26, "26"), (k_log, f"log2 N = {k_log}")):
        # Lazy: queues sized by connected peers; the O(N) tables kept (as today).
        rows.append((f"lazy RC, k = {label}", rc_process(nranks, k, k, nranks), k, ppn * k, k))
    # UD for connection set-up, then lazy RC (k = 26): one UD QP more, set-ups
    # without rdma_cm; memory as lazy RC plus the UD ring.
    lazy = rc_process(nranks, 26, 26, nranks)
    ud_ring = 512 * UD_RECV + sq_bytes(128)
    rows.append(("UD set-up + lazy RC, k = 26", (lazy[0] + ud_ring, lazy[1]), 27, ppn * 27, 26))
    # DC: DCI send QPs and one DCT; receive queues sized as a lazy 26-peer SRQ;
    # per peer an address handle and the DCT number (host memory only).
    q = plan(26)
    dc_pinned = q[1] * BUF + SEND_BUFS * BUF + (DCI + 1) * sq_bytes(q[2]) + (q[1] + (DCI + 1) * q[2] + 64) * CQE
    dc_host = nranks * (HOST_PER_RANK + 64) + nranks * BOOT_PER_RANK
    rows.append((f"DC ({DCI} DCIs + 1 DCT)", (dc_pinned, dc_host), DCI + 1, ppn * (DCI + 1), 0))
    # XRC full mesh: one send QP per remote node; each node keeps a receive
    # (TGT) QP per remote process that connected to it; SRQ per process sized
    # by peers as today.
    xq = plan(nranks - 1)
    if xq is None:
        xrc = None
    else:
        cqe = xq[1] + (nodes - 1) * xq[2] + 64
        xrc = (xq[1] * BUF + SEND_BUFS * BUF + (nodes - 1) * sq_bytes(xq[2]) + cqe * CQE,
               (nodes - 1) * HOST_PER_PEER + nranks * (HOST_PER_RANK + BOOT_PER_RANK))
    rows.append(("XRC mesh", xrc, nodes - 1, ppn * (nodes - 1) + off, nodes - 1))
    return rows


def fmt_mib(b):
    return "-" if b is None else f"{b / MIB:,.0f}" if b >= 10 * MIB else f"{b / MIB:,.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ppn", type=int, default=64, help="ranks per node (default 64)")
    ap.add_argument("--t-qp-ms", type=float, default=0.1,
                    help="NIC/driver time per QP created and connected, ms (an assumption; default 0.1)")
    a = ap.parse_args()
    sizes = [16 * a.ppn, 160 * a.ppn, 1600 * a.ppn]
    print("| scheme | N | pinned MiB/process | host MiB/process | QPs/process | QPs/node | "
          "QP set-ups/node x t_qp (s) | fits a ConnectX-6 Dx? |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for i in range(len(schemes(sizes[0], a.ppn))):
        for n in sizes:
            name, mem, qpp, qpn, _ = schemes(n, a.ppn)[i]
            why = []
            if mem is None:
                why.append("SRQ: max_srq_wr")
            if qpn > MAX_QP:
                why.append("max_qp")
            ok = "no: " + ", ".join(why) if why else "yes"
            t = qpn * a.t_qp_ms / 1e3
            pinned, host = (None, None) if mem is None else mem
            print(f"| {name} | {n:,} | {fmt_mib(pinned)} | {fmt_mib(host)} | {qpp:,} | {qpn:,} | {t:,.1f} | {ok} |")


if __name__ == "__main__":
    main()
