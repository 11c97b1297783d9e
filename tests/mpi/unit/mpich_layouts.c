/* Layouts of nested derived datatypes, as MPICH computes them: bounds,
 * true bounds, the ints MPI_Pack picks from a buffer holding i - 2048 at
 * index i, and the envelope. mpich_layouts.expected is this program's output
 * on MPICH 4.0 (Debian's libmpich), made with
 *     mpicc.mpich mpich_layouts.c -o layouts && mpiexec.mpich -n 1 ./layouts
 * The test builds it against the library's datatype objects and diffs. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#ifdef RDMX_MPI
#include "mpi_dt_proto.h"
#endif
static int src[4096];
static void show(const char *n, MPI_Datatype t, int count)
{
    MPI_Aint lb, e, tlb, te; int s;
    MPI_Type_commit(&t);
    MPI_Type_size(t, &s); MPI_Type_get_extent(t, &lb, &e); MPI_Type_get_true_extent(t, &tlb, &te);
    printf("%s: size %d lb %ld ext %ld tlb %ld text %ld |", n, s, (long)lb, (long)e, (long)tlb, (long)te);
    char buf[65536]; int pos = 0;
    MPI_Pack(src + 2048, count, t, buf, sizeof buf, &pos, MPI_COMM_WORLD);
    for (int i = 0; i + 4 <= pos && i < 4 * 40; i += 4) { int v; memcpy(&v, buf + i, 4); printf(" %d", v); }
    printf(" (%d bytes)\n", pos);
    int ni, na, nd, c; MPI_Type_get_envelope(t, &ni, &na, &nd, &c); printf("  env %d %d %d %d\n", ni, na, nd, c);
}
/* Corners where MPICH's rules are its own: zero-length blocks (they bound a
 * vector or block-indexed type, not an indexed one or a struct), types
 * without data inside a struct, negative extents, pair types in structs. */
static void edge_cases(void)
{
    MPI_Datatype a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q;
    int bl2[2] = {1, 1};
    MPI_Type_create_resized(MPI_INT, 0, 6, &a); show("resized int ext 6", a, 2);
    MPI_Aint d2[2] = {0, 6}; MPI_Datatype t2[2] = {a, MPI_CHAR};
    MPI_Type_create_struct(2, bl2, d2, t2, &b); show("struct{resized6, char@6}", b, 1);
    MPI_Type_contiguous(0, MPI_INT, &c);
    MPI_Datatype t3[2] = {c, MPI_DOUBLE}; MPI_Aint d3[2] = {100, 0};
    MPI_Type_create_struct(2, bl2, d3, t3, &d); show("struct{contig0@100, double@0}", d, 1);
    MPI_Aint d4[2] = {0, 1}; MPI_Datatype t4[2] = {MPI_CHAR, MPI_INT};
    MPI_Type_create_struct(2, bl2, d4, t4, &e); show("struct{char@0, int@1}", e, 1);
    int bl5[2] = {0, 2}; MPI_Aint d5[2] = {-50, 8}; MPI_Datatype t5[2] = {MPI_DOUBLE, MPI_SHORT};
    MPI_Type_create_struct(2, bl5, d5, t5, &f); show("struct{0 double@-50, 2 short@8}", f, 1);
    MPI_Type_vector(3, 0, 2, MPI_INT, &g); show("vector bl 0", g, 1);
    MPI_Type_create_hvector(2, 1, -20, MPI_DOUBLE_INT, &h); show("hvector neg stride DOUBLE_INT", h, 1);
    MPI_Type_create_resized(MPI_INT, 8, -4, &i); show("resized neg extent", i, 1);
    MPI_Type_contiguous(3, i, &j); show("contig of neg extent", j, 1);
    MPI_Aint d6[2] = {0, 8}; MPI_Datatype t6[2] = {MPI_2INT, MPI_SHORT};
    MPI_Type_create_struct(2, bl2, d6, t6, &k); show("struct{2int, short@8}", k, 1);
    MPI_Aint d7[2] = {0, 32}; MPI_Datatype t7[2] = {MPI_LONG_DOUBLE_INT, MPI_CHAR};
    MPI_Type_create_struct(2, bl2, d7, t7, &l); show("struct{ld_int, char@32}", l, 1);
    int zbl[3] = {0, 1, 0}, zdisp[3] = {100, 2, -100};
    MPI_Type_indexed(3, zbl, zdisp, MPI_INT, &m); show("indexed zero blocks", m, 2);
    MPI_Aint hd[2] = {16, 4};
    MPI_Type_create_hindexed_block(2, 0, hd, MPI_INT, &n); show("hindexed_block bl 0", n, 1);
    MPI_Datatype t8[2] = {m, MPI_CHAR}; MPI_Aint d8[2] = {0, 4};
    MPI_Type_create_struct(2, bl2, d8, t8, &o); show("struct{indexed, char@4}", o, 1);
    MPI_Type_create_indexed_block(3, 0, zdisp, MPI_DOUBLE, &p); show("indexed_block bl 0", p, 1);
    MPI_Datatype t9[2] = {p, MPI_INT}; MPI_Aint d9[2] = {8, 0};
    MPI_Type_create_struct(2, bl2, d9, t9, &q); show("struct{indexed_block bl 0, int}", q, 1);
}

int main(int argc, char **argv)
{
#ifndef RDMX_MPI
    MPI_Init(&argc, &argv);
#endif
    (void)argc; (void)argv;
    for (int i = 0; i < 4096; i++) src[i] = i - 2048;
    MPI_Datatype v, hv, ix, st, r, sub, c, n1, n2, n3, ib, dp, lbub, s2, subf;
    MPI_Type_vector(3, 2, -5, MPI_INT, &v); show("vector neg", v, 2);
    MPI_Type_create_hvector(3, 2, 28, v, &hv); show("hvector of vector", hv, 2);
    int bl[3] = {1, 0, 3}, d[3] = {7, 100, -2};
    MPI_Type_indexed(3, bl, d, v, &ix); show("indexed of vector", ix, 2);
    int sbl[3] = {2, 1, 1}; MPI_Aint sd[3] = {0, 12, 40}; MPI_Datatype stt[3] = {MPI_SHORT, MPI_INT, v};
    MPI_Type_create_struct(3, sbl, sd, stt, &st); show("struct short,int,vector", st, 2);
    MPI_Type_create_resized(st, -12, 100, &r); show("resized struct", r, 3);
    int sz[3] = {5, 4, 3}, ss[3] = {2, 3, 2}, sst[3] = {2, 1, 0};
    MPI_Type_create_subarray(3, sz, ss, sst, MPI_ORDER_C, MPI_INT, &sub); show("subarray3 C", sub, 1);
    MPI_Type_create_subarray(3, sz, ss, sst, MPI_ORDER_FORTRAN, MPI_INT, &subf); show("subarray3 F", subf, 1);
    MPI_Type_contiguous(2, sub, &c); show("contig of subarray", c, 1);
    MPI_Type_create_subarray(2, sz, ss, sst, MPI_ORDER_C, v, &n1); show("subarray of vector", n1, 1);
    MPI_Type_vector(2, 1, 3, MPI_DOUBLE_INT, &n2); show("vector of DOUBLE_INT", n2, 2);
    MPI_Type_vector(2, 2, 3, MPI_SHORT_INT, &n3); show("vector of SHORT_INT", n3, 2);
    int ibd[3] = {4, -3, 1}; MPI_Type_create_indexed_block(3, 2, ibd, r, &ib); show("indexed_block of resized", ib, 1);
    MPI_Type_dup(ib, &dp); show("dup", dp, 1);
    int lbl[4] = {1, 1, 1, 1}; MPI_Aint ld[4] = {-20, 4, 8, 60}; MPI_Datatype lt[4] = {MPI_LB, MPI_INT, MPI_DOUBLE, MPI_UB};
    MPI_Type_create_struct(4, lbl, ld, lt, &lbub); show("struct LB/UB", lbub, 2);
    int s2bl[2] = {1, 1}; MPI_Aint s2d[2] = {0, 4}; MPI_Datatype s2t[2] = {MPI_CHAR, MPI_DOUBLE_INT};
    MPI_Type_create_struct(2, s2bl, s2d, s2t, &s2); show("struct char,DOUBLE_INT", s2, 2);
    edge_cases();
#ifndef RDMX_MPI
    MPI_Finalize();
#endif
    return 0;
}
