#!/usr/bin/env python3
"""What the MPI layer implements, read from its sources, as markdown.

Every MPI function of MPICH's ABI (mpi/gen/functions.txt, from MPICH's
mpi_proto.h) is either implemented in mpi/*.cc or a stub that reports
MPI_ERR_UNSUPPORTED_OPERATION. A function counts as implemented when an
mpi/ source defines PMPI_<name> with a body that does more than call
err_unsupported; everything else of the ABI is a stub. The output groups
both by family.

Usage: scripts/mpi/support.py [--src mpi] [--proto mpi/gen/functions.txt] [--out FILE]
  --out FILE  replace the mpi-support:begin/end block of FILE (docs/mpi.md)
"""
import argparse
import glob
import os
import re
import sys

DEFAULT_PROTO = "/usr/include/x86_64-linux-gnu/mpich/mpi_proto.h"

# (family, regular expression on the name without MPI_), first match wins.
FAMILIES = [
    ("Init, finalize, environment", r"(Init|Init_thread|Finalize|Finalized|Initialized|Query_thread|Is_thread_main|"
     r"Abort|Get_version|Get_library_version|Get_processor_name|Wtime|Wtick|Pcontrol)$"),
    ("Errors and error handlers", r"(Error_|Errhandler_|Comm_.*errhandler|Add_error|Comm_call_errhandler)"),
    ("Partitioned communication", r"(Psend_init|Precv_init|Pready|Parrived)"),
    ("Point-to-point and requests", r"([IBSR]?[sS]end|I[bsr]send|[IBSR]send|Recv|Irecv|Sendrecv|Isendrecv|Probe|Iprobe|Mprobe|"
     r"Improbe|Mrecv|Imrecv|Get_count|Get_elements|Cancel|Test_cancelled|Request_|Wait|Test|Start|"
     r"Send_init|Bsend_init|Ssend_init|Rsend_init|Recv_init|Buffer_|Status_set|Grequest_)"),
    ("Communicators, groups, attributes", r"(Comm_|Group_|Attr_|Keyval_|Intercomm_|Topo_test|Cart|Graph|Dist_graph|"
     r"Dims_create)"),
    ("Datatypes, packing", r"(Type_|Pack|Unpack|Get_address|Address|Aint_)"),
    ("Collectives", r"((I|I(?=[a-z]))?(Barrier|Bcast|Gather|Gatherv|Scatter|Scatterv|Allgather|Allgatherv|"
     r"Alltoall|Alltoallv|Alltoallw|Reduce|Allreduce|Reduce_scatter|Reduce_scatter_block|Scan|Exscan|"
     r"Reduce_local)(_init)?$|Op_|Neighbor_|Ineighbor_)"),
    ("One-sided (RMA)", r"(Win_\w+|Put|Get|Rput|Rget|Accumulate|Raccumulate|Get_accumulate|Rget_accumulate|"
     r"Fetch_and_op|Compare_and_swap|Alloc_mem|Free_mem)$"),
    ("MPI-IO", r"(File_|Register_datarep)"),
    ("Dynamic processes, ports", r"(Comm_spawn|Open_port|Close_port|Comm_accept|Comm_connect|Comm_join|"
     r"Publish_name|Unpublish_name|Lookup_name|Comm_disconnect|Comm_get_parent)"),
    ("Sessions", r"Session_"),
    ("Info objects", r"Info_"),
    ("Tool interface (MPI_T)", r"T_"),
    ("Language interoperability", r"(.*_(c2f|f2c|c2f08|f082c|f082f|f2f08)|.*_toint|.*_fromint)$"),
]
# Families whose own patterns are tried first: dynamic processes before
# communicators, RMA before point-to-point (Get, Put), the rest in order.
ORDER = [9, 8, 13, 0, 1, 10, 11, 12, 6, 2, 3, 4, 5, 7]


def family(name):
    for i in ORDER:
        fam, pat = FAMILIES[i]
        # Nonblocking collectives capitalise only the I (MPI_Iallreduce).
        if re.match(pat, name) or (fam == "Collectives" and re.match(pat, name[:1] + name[1:2].upper() + name[2:])):
            return fam
    return "Other"


def abi_functions(proto):
    """MPI_ names of the ABI: mpi/gen/functions.txt (type, name, arguments
    per line) when given that, else the prototypes of an mpi_proto.h."""
    names = set()
    if proto.endswith(".txt"):
        for line in open(proto):
            f = line.split("\t")
            if len(f) >= 2 and f[1].startswith("MPI_") and not f[1].endswith("_c"):
                names.add(f[1][4:])
        return names
    for m in re.finditer(r"^(?:int|double|MPI_Aint|MPI_Fint|MPI_\w+) \**MPI_(\w+)\s*\(", open(proto).read(), re.M):
        n = m.group(1)
        if n.upper() != n and not n.endswith("_c"):   # no MPI_DUP_FN-style macros, no large-count _c twins
            names.add(n)
    return names


def body_after(text, start):
    """The brace-balanced body that starts at the first '{' after start."""
    i = text.find("{", start)
    if i < 0:
        return ""
    depth = 0
    for j in range(i, len(text)):
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        if depth == 0:
            return text[i:j + 1]
    return text[i:]


def implemented(src):
    done, stubs = set(), set()
    for path in glob.glob(os.path.join(src, "*.cc")) + glob.glob(os.path.join(src, "*.c")):
        text = open(path).read()
        for m in re.finditer(r"\bPMPI_(\w+)\s*\([^;{]*\)\s*(?=\{)", text):
            body = body_after(text, m.end())
            statements = body.count(";")
            (stubs if "err_unsupported" in body and statements <= 2 else done).add(m.group(1))
    return done, stubs


def render(abi, done):
    out = []
    groups = {}
    for n in sorted(abi):
        groups.setdefault(family(n), ([], []))[0 if n in done else 1].append(n)
    total = len(abi)
    ndone = len(abi & done)
    out.append(f"{ndone} of the {total} C functions of MPICH 4.0's ABI are implemented (read from `mpi/` by "
               "`scripts/mpi/support.py`; the large-count `_c` variants and the `MPIX_` extensions are not counted). Every other "
               "one is a stub (see below).")
    out.append("")
    out.append("| family | implemented | stubs |")
    out.append("| --- | --- | ---: |")
    names = [f for f, _ in FAMILIES] + ["Other"]
    for fam in names:
        if fam not in groups:
            continue
        yes, no = groups[fam]
        listed = ", ".join(f"`{n}`" for n in yes) if yes else "none"
        out.append(f"| {fam} | {listed} | {len(no)} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--src", default=os.path.join(top, "mpi"))
    listed = os.path.join(top, "mpi", "gen", "functions.txt")
    ap.add_argument("--proto", default=listed if os.path.exists(listed) else DEFAULT_PROTO,
                    help="mpi/gen/functions.txt (default) or MPICH's mpi_proto.h")
    ap.add_argument("--out")
    a = ap.parse_args()
    if not os.path.exists(a.proto):
        sys.exit(f"support.py: no {a.proto} (apt-get install libmpich-dev)")
    done, _ = implemented(a.src)
    table = render(abi_functions(a.proto), done)
    print(table)
    if a.out:
        s = open(a.out).read()
        new, n = re.subn(r"(<!-- mpi-support:begin -->\n).*?(<!-- mpi-support:end -->)",
                         lambda m: m.group(1) + table + "\n" + m.group(2), s, flags=re.S)
        if n != 1:
            sys.exit(f"support.py: no mpi-support:begin/end block in {a.out}")
        open(a.out, "w").write(new)


if __name__ == "__main__":
    main()
