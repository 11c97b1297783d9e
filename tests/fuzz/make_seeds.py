#!/usr/bin/env python3
"""Writes the seed corpora under corpus/<target>/ (run from anywhere).

File names start with the decoders that must accept the bytes (see
replay_main.cc): c connect, a accept, r reject, m msg header, R rts, F fin;
"none_" when all refuse. Re-run after changing the wire format.
"""
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
MAGIC = 0x784D4452
VERSION = 1
EAGER, RTS, FIN, CREDIT = 1, 2, 3, 4
U64 = (1 << 64) - 1


def connect_priv(magic=MAGIC, version=VERSION, length=40):
    return struct.pack("<IHHQIIQII", magic, version, length, 0x0123456789ABCDEF, 0, 1,
                       0x00007F0000001000, 0xDEADBEEF, 64)


def accept_priv(magic=MAGIC, version=VERSION, length=40):
    return struct.pack("<IHHQIIQII", magic, version, length, 0x0123456789ABCDEF, 1, 64,
                       0x00007F0000002000, 0x12345678, 0)


def reject_priv(reason, magic=MAGIC, version=VERSION):
    return struct.pack("<IHH", magic, version, reason)


def pad(b, n):
    return b + bytes(n - len(b))


def hdr(type_, length, tag=7, space=0, version=VERSION, cookie=0, credits=8, seq=0, comm=0, reserved=0):
    return struct.pack("<BBBBiIIQQII", version, type_, space, 0, tag, credits, seq, length, cookie, comm, reserved)


def rndv(addr, length, rkey=0x1234):
    return struct.pack("<QQII", addr, length, rkey, 0)


def payload(n):
    return bytes((i * 131 + 7) & 0xFF for i in range(n))


def rndv_input(addr, length, rkey=0x1234, space=0, flags=0, tag=0, len_xor=0, cookie=0, credits=0, seq=0,
               full=True):
    body = rndv(addr, length, rkey)
    if not full:
        return body
    return body + struct.pack("<BBiQQII", space, flags, tag, len_xor, cookie, credits, seq)


SEEDS = {
    "fuzz_connect_priv": {
        "car_connect.bin": connect_priv(),
        "car_connect_padded56.bin": pad(connect_priv(), 56),
        "car_accept_padded196.bin": pad(accept_priv(), 196),
        "r_reject_duplicate_rank.bin": reject_priv(6),
        "r_reject_padded56.bin": pad(reject_priv(3), 56),
        "r_length_field_56.bin": pad(connect_priv(length=56), 56),
        "r_truncated39.bin": connect_priv()[:39],
        "none_bad_magic.bin": connect_priv(magic=0x12345678),
        "none_byteswapped_magic.bin": connect_priv(magic=0x5244_4D78),
        "none_bad_version.bin": pad(connect_priv(version=2), 56),
        "none_short7.bin": connect_priv()[:7],
        "none_empty.bin": b"",
    },
    "fuzz_msg_hdr": {
        "m_eager_0.bin": hdr(EAGER, 0),
        "m_eager_100.bin": hdr(EAGER, 100) + payload(100),
        "m_eager_8192.bin": hdr(EAGER, 8192, space=2, tag=0x7FFFFFFF) + payload(8192),
        "m_credit.bin": hdr(CREDIT, 0, tag=0),
        "mR_rts.bin": hdr(RTS, 1 << 20, cookie=5) + rndv(0x00007F0012340000, 1 << 20),
        "mR_rts_zero_length.bin": hdr(RTS, 0, cookie=5) + rndv(0x1000, 0),
        "m_rts_wraps.bin": hdr(RTS, 4096, cookie=5) + rndv(U64 - 100, 4096),
        "m_rts_length_mismatch.bin": hdr(RTS, 4096, cookie=5) + rndv(0x1000, 4095),
        "mF_fin.bin": hdr(FIN, 0, tag=0, cookie=5) + struct.pack("<iI", 0, 0),
        "mF_fin_error_status.bin": hdr(FIN, 0, tag=0, cookie=9) + struct.pack("<iI", -2, 0),
        "none_eager_8193.bin": hdr(EAGER, 8193) + payload(8193),
        "none_eager_length_mismatch.bin": hdr(EAGER, 101) + payload(100),
        "none_bad_version.bin": hdr(EAGER, 0, version=2),
        "none_bad_type.bin": hdr(9, 0),
        "none_negative_tag.bin": hdr(EAGER, 4, tag=-1) + payload(4),
        "none_space4.bin": hdr(EAGER, 4, space=4) + payload(4),
        "m_space3_comm7.bin": hdr(EAGER, 4, space=3, comm=7) + payload(4),
        "none_comm_too_big.bin": hdr(EAGER, 4, comm=4096) + payload(4),
        "none_reserved_set.bin": hdr(EAGER, 4, reserved=1) + payload(4),
        "none_short31.bin": hdr(CREDIT, 0)[:31],
        "none_rts_body23.bin": hdr(RTS, 4096) + rndv(0x1000, 4096)[:23],
        "none_fin_body9.bin": hdr(FIN, 0) + bytes(9),
        "none_credit_body1.bin": hdr(CREDIT, 0) + b"\x00",
    },
    "fuzz_rndv_desc": {
        "mR_valid_4k.bin": rndv_input(0x00007F0000001000, 4096, full=False),
        "mR_full_fields.bin": rndv_input(0x00007F0000100000, 1 << 30, space=2, tag=12345, cookie=77,
                                         credits=64, seq=3),
        "mR_last_range.bin": rndv_input(U64 - 100, 100),
        "mR_empty.bin": b"",
        "mR_zero_length.bin": rndv_input(0x1000, 0),
        "m_wraps.bin": rndv_input(U64 - 9, 100),
        "m_length_mismatch.bin": rndv_input(0x1000, 4096, len_xor=1),
        "none_negative_tag.bin": rndv_input(0x1000, 4096, tag=-1),
        "none_space4.bin": rndv_input(0x1000, 4096, space=4),
    },
}


def main():
    for target, seeds in SEEDS.items():
        d = os.path.join(HERE, "corpus", target)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        for name, data in seeds.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
        print(f"{target}: {len(seeds)} seeds")


if __name__ == "__main__":
    main()
