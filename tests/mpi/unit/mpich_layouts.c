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
#ifndef RDMX_MPI
    MPI_Finalize();
#endif
    return 0;
}
