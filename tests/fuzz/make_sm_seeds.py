#!/usr/bin/env python3
"""Writes the seeds under corpus/fuzz_sm_slot/ (see replay_main.cc for the
name letters: s slot header, q pipelined request, g segment header).
Re-run after changing transport/sm_shm.h."""
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "fuzz_sm_slot")
SEG_MAGIC, SEG_VERSION = 0x536D4452, 1
LINE, STAGE_CHUNKS = 64, 4
U64 = (1 << 64) - 1


def round_line(v):
    return (v + LINE - 1) // LINE * LINE


SLOT_SIZE = round_line(16 + 32 + 8192)  # slot_size_for(8192)


def total_of(nrings, nslots, slot_size, chunk):
    ring_off = round_line(64 + 64 + 256)
    ring_stride = 2 * LINE + nslots * slot_size
    stage_off = ring_off + ring_stride * nrings
    return stage_off + STAGE_CHUNKS * (LINE + chunk) * nrings


def slot(length, kind):
    return struct.pack("<IIQ", length, kind, 0)


def req(op, length, raddr=0x7F0000001000, key=5, seq=0):
    return struct.pack("<IIQQQ", op, key, raddr, length, seq)


def seg(magic=SEG_MAGIC, version=SEG_VERSION, job_key=0x5EED, owner=3, pid=1234, nrings=2, nslots=64,
        slot_size=SLOT_SIZE, chunk=256 << 10, total=None):
    if total is None:
        total = total_of(nrings, nslots, slot_size, chunk)
    return struct.pack("<IHHQIIIIIIQQQ", magic, version, 64, job_key, owner, pid, nrings, nslots, slot_size, chunk,
                       total, 0, 0)


SEEDS = {
    "s_msg_slot.bin": slot(32 + 100, 0),
    "s_msg_slot_full.bin": slot(SLOT_SIZE - 16, 0),
    "s_req_slot.bin": slot(32, 1),
    "none_slot_too_long.bin": slot(SLOT_SIZE - 16 + 1, 0),
    "none_slot_kind.bin": slot(40, 7),
    "none_slot_short_msg.bin": slot(31, 0),
    "none_slot_req_len.bin": slot(33, 1),
    "q_get.bin": req(1, 4096),
    "q_put_max.bin": req(2, 4 << 20),
    "none_req_zero_len.bin": req(1, 0),
    "none_req_wraps.bin": req(1, 100, raddr=U64 - 10),
    "none_req_op3.bin": req(3, 100),
    "none_req_too_long.bin": req(2, (4 << 20) + 1),
    "g_segment.bin": seg(),
    "none_seg_magic.bin": seg(magic=0x12345678),
    "none_seg_version.bin": seg(version=2),
    "none_seg_job_key.bin": seg(job_key=0xBAD),
    "none_seg_owner.bin": seg(owner=4),
    "none_seg_total_off_by_one.bin": seg(total=total_of(2, 64, SLOT_SIZE, 256 << 10) + 1),
    "none_seg_one_ring.bin": seg(nrings=1),
    "none_seg_huge_nslots.bin": seg(nslots=1 << 30),
    "none_seg_slot_size.bin": seg(slot_size=SLOT_SIZE + 64),
    "none_seg_short.bin": seg()[:63],
}

if __name__ == "__main__":
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    for name, data in SEEDS.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
