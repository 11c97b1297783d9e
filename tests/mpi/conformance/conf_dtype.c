/* Datatypes: every predefined type's size, extent and name, and each sent
 * around the ring; the pair types; Type_contiguous/vector/create_hvector/
 * indexed/create_indexed_block/create_struct/create_resized/commit/free/
 * size/get_extent/get_true_extent/get_name; sends and receives of types
 * with holes (the holes of the receive buffer stay untouched); Get_elements
 * on partial derived data; Pack/Unpack/Pack_size. */
#include "conf.h"

#include <complex.h>
#include <stddef.h>
#include <stdint.h>

#define TAG_A 41
#define SENTINEL (-7)
#define N_ELEMS 3

struct predef {
    MPI_Datatype t;
    const char *label; /* the handle's name in mpi.h */
    const char *name;  /* what MPI_Type_get_name gives on MPICH */
    int size;
    MPI_Aint extent;
    int significant; /* bytes compared per element: long double pads */
};

#define P(t, size, ext) {t, #t, #t, size, ext, size}
/* MPICH names MPI_C_FLOAT_COMPLEX (the same handle as MPI_C_COMPLEX) by the latter. */
static const struct predef predefs[] = {
    P(MPI_CHAR, 1, 1), P(MPI_SIGNED_CHAR, 1, 1), P(MPI_UNSIGNED_CHAR, 1, 1), P(MPI_BYTE, 1, 1),
    P(MPI_WCHAR, 4, 4), P(MPI_SHORT, 2, 2), P(MPI_UNSIGNED_SHORT, 2, 2), P(MPI_INT, 4, 4),
    P(MPI_UNSIGNED, 4, 4), P(MPI_LONG, 8, 8), P(MPI_UNSIGNED_LONG, 8, 8), P(MPI_FLOAT, 4, 4),
    P(MPI_DOUBLE, 8, 8), {MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", "MPI_LONG_DOUBLE", 16, 16, 10}, P(MPI_LONG_LONG_INT, 8, 8),
    P(MPI_UNSIGNED_LONG_LONG, 8, 8), P(MPI_PACKED, 1, 1), P(MPI_INT8_T, 1, 1), P(MPI_INT16_T, 2, 2),
    P(MPI_INT32_T, 4, 4), P(MPI_INT64_T, 8, 8), P(MPI_UINT8_T, 1, 1), P(MPI_UINT16_T, 2, 2),
    P(MPI_UINT32_T, 4, 4), P(MPI_UINT64_T, 8, 8), P(MPI_C_BOOL, 1, 1), {MPI_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX", "MPI_C_COMPLEX", 8, 8, 8},
    P(MPI_C_DOUBLE_COMPLEX, 16, 16), P(MPI_AINT, 8, 8), P(MPI_OFFSET, 8, 8), P(MPI_COUNT, 8, 8),
    P(MPI_2INT, 8, 8), P(MPI_FLOAT_INT, 8, 8), P(MPI_INTEGER, 4, 4), P(MPI_REAL, 4, 4),
    P(MPI_DOUBLE_PRECISION, 8, 8), P(MPI_COMPLEX, 8, 8), P(MPI_LOGICAL, 4, 4), P(MPI_CHARACTER, 1, 1),
    P(MPI_2INTEGER, 8, 8), P(MPI_CXX_BOOL, 1, 1),
};
#undef P

static void check_predefined(void)
{
    const int n = (int)(sizeof predefs / sizeof predefs[0]);
    for (int k = 0; k < n; k++) {
        const struct predef *p = &predefs[k];
        int size = -1, len = -1;
        MPI_Aint lb = -1, ext = -1;
        char name[MPI_MAX_OBJECT_NAME] = {0};
        MPI_OK(MPI_Type_size(p->t, &size));
        CHECK(size == p->size, "%s size %d, want %d", p->label, size, p->size);
        MPI_OK(MPI_Type_get_extent(p->t, &lb, &ext));
        CHECK(lb == 0 && ext == p->extent, "%s lb %ld extent %ld, want 0 and %ld", p->label, (long)lb, (long)ext,
              (long)p->extent);
        MPI_OK(MPI_Type_get_name(p->t, name, &len));
        CHECK(strcmp(name, p->name) == 0 && len == (int)strlen(p->name), "MPI_Type_get_name(%s) = \"%s\" (%d), want \"%s\"",
              p->label, name, len, p->name);
    }
}

/* Each predefined type, N_ELEMS elements around the ring, bytes compared. */
static void check_predefined_traffic(void)
{
    const int n = (int)(sizeof predefs / sizeof predefs[0]);
    unsigned char out[N_ELEMS * 16], in[N_ELEMS * 16];
    for (int k = 0; k < n; k++) {
        const struct predef *p = &predefs[k];
        size_t bytes = (size_t)p->extent * N_ELEMS;
        MPI_Request rq;
        MPI_Status st;
        int c = -1;
        for (size_t i = 0; i < bytes; i++)
            out[i] = (unsigned char)(conf_rank * 31 + k * 7 + (int)i);
        /* MPI_C_BOOL and MPI_CXX_BOOL hold 0 or 1. */
        if (p->t == MPI_C_BOOL || p->t == MPI_CXX_BOOL)
            for (size_t i = 0; i < bytes; i++)
                out[i] &= 1;
        memset(in, 0xee, sizeof in);
        MPI_OK(MPI_Irecv(in, N_ELEMS, p->t, conf_left(), TAG_A, MPI_COMM_WORLD, &rq));
        MPI_OK(MPI_Send(out, N_ELEMS, p->t, conf_right(), TAG_A, MPI_COMM_WORLD));
        MPI_OK(MPI_Wait(&rq, &st));
        MPI_OK(MPI_Get_count(&st, p->t, &c));
        CHECK(c == N_ELEMS, "%s: count %d", p->label, c);
        for (int e = 0; e < N_ELEMS; e++)
            for (int b = 0; b < p->significant; b++) {
                size_t i = (size_t)e * (size_t)p->extent + (size_t)b;
                unsigned char want = (unsigned char)(conf_left() * 31 + k * 7 + (int)i);
                if (p->t == MPI_C_BOOL || p->t == MPI_CXX_BOOL)
                    want &= 1;
                CHECK(in[i] == want, "%s: byte %zu = %#x, want %#x", p->label, i, in[i], want);
            }
    }
}

/* The pair types with padding (DOUBLE_INT, LONG_INT, SHORT_INT,
 * LONG_DOUBLE_INT): size, extent, and values through a send. */
static void check_pair_types(void)
{
    struct { double d; int i; } di[2], di_in[2];
    struct { long l; int i; } li[2], li_in[2];
    struct { short s; int i; } si[2], si_in[2];
    struct { long double ld; int i; } ldi[2], ldi_in[2];
    int size;
    MPI_Aint lb, ext;
    MPI_OK(MPI_Type_size(MPI_DOUBLE_INT, &size));
    MPI_OK(MPI_Type_get_extent(MPI_DOUBLE_INT, &lb, &ext));
    CHECK(size == 12 && ext == (MPI_Aint)sizeof di[0], "MPI_DOUBLE_INT size %d extent %ld", size, (long)ext);
    MPI_OK(MPI_Type_size(MPI_SHORT_INT, &size));
    MPI_OK(MPI_Type_get_extent(MPI_SHORT_INT, &lb, &ext));
    CHECK(size == 6 && ext == (MPI_Aint)sizeof si[0], "MPI_SHORT_INT size %d extent %ld", size, (long)ext);
    MPI_OK(MPI_Type_size(MPI_LONG_INT, &size));
    MPI_OK(MPI_Type_get_extent(MPI_LONG_INT, &lb, &ext));
    CHECK(size == 12 && ext == (MPI_Aint)sizeof li[0], "MPI_LONG_INT size %d extent %ld", size, (long)ext);
    MPI_OK(MPI_Type_get_extent(MPI_LONG_DOUBLE_INT, &lb, &ext));
    CHECK(ext == (MPI_Aint)sizeof ldi[0], "MPI_LONG_DOUBLE_INT extent %ld", (long)ext);
    for (int k = 0; k < 2; k++) {
        di[k].d = conf_rank + 0.5 * k;
        di[k].i = conf_val(conf_rank, k);
        li[k].l = 1000000000000L * conf_rank + k;
        li[k].i = -k;
        si[k].s = (short)(conf_rank * 3 + k);
        si[k].i = conf_val(conf_rank, k);
        memset(&ldi[k], 0, sizeof ldi[k]);
        ldi[k].ld = conf_rank + 0.25L * k;
        ldi[k].i = k;
    }
    MPI_OK(MPI_Sendrecv(di, 2, MPI_DOUBLE_INT, conf_right(), 1, di_in, 2, MPI_DOUBLE_INT, conf_left(), 1,
                        MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    MPI_OK(MPI_Sendrecv(li, 2, MPI_LONG_INT, conf_right(), 2, li_in, 2, MPI_LONG_INT, conf_left(), 2,
                        MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    MPI_OK(MPI_Sendrecv(si, 2, MPI_SHORT_INT, conf_right(), 3, si_in, 2, MPI_SHORT_INT, conf_left(), 3,
                        MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    MPI_OK(MPI_Sendrecv(ldi, 2, MPI_LONG_DOUBLE_INT, conf_right(), 4, ldi_in, 2, MPI_LONG_DOUBLE_INT, conf_left(),
                        4, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    int l = conf_left();
    for (int k = 0; k < 2; k++) {
        CHECK(di_in[k].d == l + 0.5 * k && di_in[k].i == conf_val(l, k), "MPI_DOUBLE_INT element %d", k);
        CHECK(li_in[k].l == 1000000000000L * l + k && li_in[k].i == -k, "MPI_LONG_INT element %d", k);
        CHECK(si_in[k].s == l * 3 + k && si_in[k].i == conf_val(l, k), "MPI_SHORT_INT element %d", k);
        CHECK(ldi_in[k].ld == l + 0.25L * k && ldi_in[k].i == k, "MPI_LONG_DOUBLE_INT element %d", k);
    }
}

/* Sends `scount` of `st` from `sbuf` to the right, receives `rcount` of
 * `rt` into `rbuf` from the left. */
static void ring(const void *sbuf, int scount, MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt)
{
    MPI_Request rq;
    MPI_OK(MPI_Irecv(rbuf, rcount, rt, conf_left(), TAG_A, MPI_COMM_WORLD, &rq));
    MPI_OK(MPI_Send(sbuf, scount, st, conf_right(), TAG_A, MPI_COMM_WORLD));
    MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
}

static void type_shape(MPI_Datatype t, int size, MPI_Aint lb, MPI_Aint ext, MPI_Aint tlb, MPI_Aint text,
                       const char *what)
{
    int s = -1;
    MPI_Aint l = -1, e = -1;
    MPI_OK(MPI_Type_size(t, &s));
    CHECK(s == size, "%s: size %d, want %d", what, s, size);
    MPI_OK(MPI_Type_get_extent(t, &l, &e));
    CHECK(l == lb && e == ext, "%s: lb %ld extent %ld, want %ld %ld", what, (long)l, (long)e, (long)lb, (long)ext);
    MPI_OK(MPI_Type_get_true_extent(t, &l, &e));
    CHECK(l == tlb && e == text, "%s: true lb %ld extent %ld, want %ld %ld", what, (long)l, (long)e, (long)tlb,
          (long)text);
}

/* A vector with holes: 4 blocks of 2 ints, stride 3. Sent from a vector,
 * received into contiguous ints, and vector to vector with the holes of
 * the receive buffer left alone. */
static void check_vector(void)
{
    enum { COUNT = 4, BLEN = 2, STRIDE = 3, SPAN = (COUNT - 1) * STRIDE + BLEN };
    MPI_Datatype v;
    int src[SPAN], dst[SPAN], flat[COUNT * BLEN];
    MPI_OK(MPI_Type_vector(COUNT, BLEN, STRIDE, MPI_INT, &v));
    MPI_OK(MPI_Type_commit(&v));
    type_shape(v, COUNT * BLEN * 4, 0, SPAN * 4, 0, SPAN * 4, "vector");
    for (int i = 0; i < SPAN; i++)
        src[i] = conf_val(conf_rank, i);
    ring(src, 1, v, flat, COUNT * BLEN, MPI_INT);
    for (int b = 0, k = 0; b < COUNT; b++)
        for (int j = 0; j < BLEN; j++, k++)
            CHECK_INT(flat[k], conf_val(conf_left(), b * STRIDE + j));
    for (int i = 0; i < SPAN; i++)
        dst[i] = SENTINEL;
    ring(src, 1, v, dst, 1, v);
    for (int i = 0; i < SPAN; i++)
        CHECK(dst[i] == (i % STRIDE < BLEN ? conf_val(conf_left(), i) : SENTINEL), "vector element %d = %d", i,
              dst[i]);
    /* Two vectors back to back: the second starts one extent later. */
    int two[2 * SPAN], two_in[2 * COUNT * BLEN];
    for (int i = 0; i < 2 * SPAN; i++)
        two[i] = conf_val(conf_rank, i);
    ring(two, 2, v, two_in, 2 * COUNT * BLEN, MPI_INT);
    CHECK_INT(two_in[COUNT * BLEN], conf_val(conf_left(), SPAN));
    MPI_OK(MPI_Type_free(&v));
    CHECK(v == MPI_DATATYPE_NULL, "MPI_Type_free did not set MPI_DATATYPE_NULL");
}

/* A large non-contiguous message (1 MiB of data in 64 Ki blocks): past any
 * eager limit, packed or sent as an I/O vector by the library. */
static void check_large_vector(void)
{
    enum { BLOCKS = 1 << 16, BLEN = 4, STRIDE = 6 };
    MPI_Datatype v;
    size_t span = (size_t)(BLOCKS - 1) * STRIDE + BLEN;
    int *src = malloc(sizeof(int) * span), *dst = malloc(sizeof(int) * span);
    MPI_OK(MPI_Type_vector(BLOCKS, BLEN, STRIDE, MPI_INT, &v));
    MPI_OK(MPI_Type_commit(&v));
    for (size_t i = 0; i < span; i++) {
        src[i] = conf_val(conf_rank, (int)i);
        dst[i] = SENTINEL;
    }
    ring(src, 1, v, dst, 1, v);
    for (size_t i = 0; i < span; i++) {
        int want = i % STRIDE < BLEN ? conf_val(conf_left(), (int)i) : SENTINEL;
        CHECK(dst[i] == want, "element %zu = %d, want %d", i, dst[i], want);
    }
    MPI_OK(MPI_Type_free(&v));
    free(src);
    free(dst);
}

/* hvector of doubles, stride in bytes, and contiguous of it. */
static void check_hvector_contiguous(void)
{
    MPI_Datatype hv, c;
    double src[12], dst[12], flat[6];
    MPI_OK(MPI_Type_create_hvector(3, 1, 4 * sizeof(double), MPI_DOUBLE, &hv));
    MPI_OK(MPI_Type_commit(&hv));
    MPI_OK(MPI_Type_contiguous(2, hv, &c));
    MPI_OK(MPI_Type_commit(&c));
    /* hv spans 9 doubles; c is two of them back to back. */
    type_shape(hv, 24, 0, 9 * 8, 0, 9 * 8, "hvector");
    type_shape(c, 48, 0, 18 * 8, 0, 18 * 8, "contiguous of hvector");
    for (int i = 0; i < 12; i++) {
        src[i] = conf_rank + i / 16.0;
        dst[i] = SENTINEL;
    }
    ring(src, 1, hv, flat, 3, MPI_DOUBLE);
    for (int k = 0; k < 3; k++)
        CHECK(flat[k] == conf_left() + (4 * k) / 16.0, "hvector element %d = %g", k, flat[k]);
    /* Three contiguous doubles into the hvector: the gaps stay. */
    double three[3] = {conf_rank + 0.25, conf_rank + 0.5, conf_rank + 0.75};
    ring(three, 3, MPI_DOUBLE, dst, 1, hv);
    for (int i = 0; i < 12; i++) {
        double want = i % 4 == 0 && i < 9 ? conf_left() + 0.25 * (i / 4 + 1) : SENTINEL;
        CHECK(dst[i] == want, "hvector receive element %d = %g, want %g", i, dst[i], want);
    }
    MPI_OK(MPI_Type_free(&hv));
    MPI_OK(MPI_Type_free(&c));
}

/* indexed (blocks of varying length, out of order) and indexed_block. */
static void check_indexed(void)
{
    int blens[3] = {2, 1, 3}, displs[3] = {5, 0, 9};
    int bdispls[3] = {7, 1, 4};
    MPI_Datatype ix, ib;
    int src[12], dst[12], flat[6];
    MPI_OK(MPI_Type_indexed(3, blens, displs, MPI_INT, &ix));
    MPI_OK(MPI_Type_commit(&ix));
    type_shape(ix, 24, 0, 48, 0, 48, "indexed");
    MPI_OK(MPI_Type_create_indexed_block(3, 2, bdispls, MPI_INT, &ib));
    MPI_OK(MPI_Type_commit(&ib));
    type_shape(ib, 24, 4, 32, 4, 32, "indexed_block");
    for (int i = 0; i < 12; i++)
        src[i] = conf_val(conf_rank, i);
    ring(src, 1, ix, flat, 6, MPI_INT);
    const int order[6] = {5, 6, 0, 9, 10, 11};
    for (int k = 0; k < 6; k++)
        CHECK(flat[k] == conf_val(conf_left(), order[k]), "indexed element %d = %d", k, flat[k]);
    for (int i = 0; i < 12; i++)
        dst[i] = SENTINEL;
    ring(src, 1, ix, dst, 1, ib);
    /* ib's slots in order: 7 8 1 2 4 5 get ix's order 5 6 0 9 10 11. */
    const int slot[6] = {7, 8, 1, 2, 4, 5};
    int want[12];
    for (int i = 0; i < 12; i++)
        want[i] = SENTINEL;
    for (int k = 0; k < 6; k++)
        want[slot[k]] = conf_val(conf_left(), order[k]);
    for (int i = 0; i < 12; i++)
        CHECK(dst[i] == want[i], "indexed -> indexed_block element %d = %d, want %d", i, dst[i], want[i]);
    MPI_OK(MPI_Type_free(&ix));
    MPI_OK(MPI_Type_free(&ib));
}

/* A struct with padding, resized to the C struct's size so arrays of it
 * work; the padding bytes of the receive buffer stay. */
struct rec {
    char c;    /* 7 bytes of padding follow */
    double d;
    int i;     /* 4 bytes of padding follow */
};

static MPI_Datatype rec_type(void)
{
    int blens[3] = {1, 1, 1};
    MPI_Aint displs[3] = {offsetof(struct rec, c), offsetof(struct rec, d), offsetof(struct rec, i)};
    MPI_Datatype types[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT}, s, r;
    MPI_OK(MPI_Type_create_struct(3, blens, displs, types, &s));
    MPI_OK(MPI_Type_create_resized(s, 0, sizeof(struct rec), &r));
    MPI_OK(MPI_Type_free(&s)); /* r stays usable */
    MPI_OK(MPI_Type_commit(&r));
    return r;
}

static void check_struct_resized(void)
{
    enum { N = 4 };
    struct rec out[N], in[N];
    MPI_Datatype r = rec_type(), s2;
    type_shape(r, 13, 0, sizeof(struct rec), 0, offsetof(struct rec, i) + 4, "struct resized");
    memset(out, 0, sizeof out);
    for (int k = 0; k < N; k++) {
        out[k].c = (char)('a' + conf_rank + k);
        out[k].d = conf_rank * 10.0 + k;
        out[k].i = conf_val(conf_rank, k);
    }
    memset(in, 0x5a, sizeof in);
    ring(out, N, r, in, N, r);
    const unsigned char *raw = (const unsigned char *)in;
    for (int k = 0; k < N; k++) {
        CHECK(in[k].c == (char)('a' + conf_left() + k) && in[k].d == conf_left() * 10.0 + k &&
                  in[k].i == conf_val(conf_left(), k),
              "struct element %d: %c %g %d", k, in[k].c, in[k].d, in[k].i);
        for (size_t b = 1; b < offsetof(struct rec, d); b++)
            CHECK(raw[k * sizeof(struct rec) + b] == 0x5a, "struct %d padding byte %zu written", k, b);
        for (size_t b = offsetof(struct rec, i) + 4; b < sizeof(struct rec); b++)
            CHECK(raw[k * sizeof(struct rec) + b] == 0x5a, "struct %d tail padding byte %zu written", k, b);
    }
    /* Resized to skip every other int: a strided view with lb > 0. */
    MPI_OK(MPI_Type_create_resized(MPI_INT, 4, 8, &s2));
    MPI_OK(MPI_Type_commit(&s2));
    type_shape(s2, 4, 4, 8, 0, 4, "resized int");
    int src[8], dst[8];
    for (int i = 0; i < 8; i++) {
        src[i] = conf_val(conf_rank, i);
        dst[i] = SENTINEL;
    }
    /* lb 4 does not move the data: element k is at k * 8 bytes. */
    ring(src, 4, s2, dst, 4, MPI_INT);
    for (int k = 0; k < 4; k++)
        CHECK(dst[k] == conf_val(conf_left(), 2 * k), "resized element %d = %d", k, dst[k]);
    MPI_OK(MPI_Type_free(&s2));
    MPI_OK(MPI_Type_free(&r));
}

/* Get_elements counts basic elements of a partial struct. */
static void check_get_elements(void)
{
    MPI_Datatype r = rec_type();
    struct rec out[2], in[2];
    MPI_Request rq;
    MPI_Status st;
    int c = -1;
    memset(out, 0, sizeof out);
    MPI_OK(MPI_Irecv(in, 2, r, conf_left(), TAG_A, MPI_COMM_WORLD, &rq));
    /* One whole record, then a char and a double of the next: 5 elements. */
    char packed[64];
    int pos = 0;
    MPI_OK(MPI_Pack(&out[0], 1, r, packed, sizeof packed, &pos, MPI_COMM_WORLD));
    MPI_OK(MPI_Pack(&out[1].c, 1, MPI_CHAR, packed, sizeof packed, &pos, MPI_COMM_WORLD));
    MPI_OK(MPI_Pack(&out[1].d, 1, MPI_DOUBLE, packed, sizeof packed, &pos, MPI_COMM_WORLD));
    MPI_OK(MPI_Send(packed, pos, MPI_PACKED, conf_right(), TAG_A, MPI_COMM_WORLD));
    MPI_OK(MPI_Wait(&rq, &st));
    MPI_OK(MPI_Get_count(&st, r, &c));
    CHECK_INT(c, MPI_UNDEFINED);
    MPI_OK(MPI_Get_elements(&st, r, &c));
    CHECK_INT(c, 5);
    MPI_OK(MPI_Get_count(&st, MPI_BYTE, &c));
    CHECK_INT(c, 13 + 9);
    MPI_OK(MPI_Type_free(&r));
}

/* Pack_size bounds Pack's output; Pack then Unpack into another layout
 * round-trips; a packed message received as typed data. */
static void check_pack(void)
{
    MPI_Datatype v;
    int src[10], dst[10], ints[4], psize = -1, pos = 0, pos2 = 0;
    double d = 2.5 + conf_rank, d2 = 0;
    char buf[256];
    MPI_OK(MPI_Type_vector(4, 1, 2, MPI_INT, &v));
    MPI_OK(MPI_Type_commit(&v));
    MPI_OK(MPI_Pack_size(1, v, MPI_COMM_WORLD, &psize));
    CHECK(psize >= 16, "MPI_Pack_size of 4 ints = %d", psize);
    MPI_OK(MPI_Pack_size(0, v, MPI_COMM_WORLD, &psize));
    CHECK(psize >= 0, "MPI_Pack_size of nothing = %d", psize);
    for (int i = 0; i < 10; i++) {
        src[i] = conf_val(conf_rank, i);
        dst[i] = SENTINEL;
    }
    MPI_OK(MPI_Pack(src, 1, v, buf, sizeof buf, &pos, MPI_COMM_WORLD));
    CHECK_INT(pos, 16);
    MPI_OK(MPI_Pack(&d, 1, MPI_DOUBLE, buf, sizeof buf, &pos, MPI_COMM_WORLD));
    CHECK_INT(pos, 24);
    MPI_OK(MPI_Unpack(buf, sizeof buf, &pos2, ints, 4, MPI_INT, MPI_COMM_WORLD));
    MPI_OK(MPI_Unpack(buf, sizeof buf, &pos2, &d2, 1, MPI_DOUBLE, MPI_COMM_WORLD));
    CHECK_INT(pos2, 24);
    for (int k = 0; k < 4; k++)
        CHECK_INT(ints[k], conf_val(conf_rank, 2 * k));
    CHECK(d2 == d, "unpacked double %g, want %g", d2, d);
    /* Packed bytes sent as MPI_PACKED, received into the vector layout. */
    ring(buf, 16, MPI_PACKED, dst, 1, v);
    for (int i = 0; i < 10; i++)
        CHECK(dst[i] == (i % 2 == 0 && i < 8 ? conf_val(conf_left(), i) : SENTINEL), "element %d = %d", i,
              dst[i]);
    /* And the other way: typed send, MPI_PACKED receive, then Unpack. */
    char rbuf[64];
    int rpos = 0;
    ring(src, 1, v, rbuf, sizeof rbuf, MPI_PACKED);
    MPI_OK(MPI_Unpack(rbuf, sizeof rbuf, &rpos, ints, 4, MPI_INT, MPI_COMM_WORLD));
    for (int k = 0; k < 4; k++)
        CHECK_INT(ints[k], conf_val(conf_left(), 2 * k));
    MPI_OK(MPI_Type_free(&v));
}

/* A type freed while a nonblocking send and receive still use it: the
 * operations complete with it (the free only marks it). */
static void check_free_while_pending(void)
{
    MPI_Datatype v;
    int src[8], dst[8];
    MPI_Request rq[2];
    MPI_OK(MPI_Type_vector(4, 1, 2, MPI_INT, &v));
    MPI_OK(MPI_Type_commit(&v));
    for (int i = 0; i < 8; i++) {
        src[i] = conf_val(conf_rank, i);
        dst[i] = SENTINEL;
    }
    MPI_OK(MPI_Irecv(dst, 1, v, conf_left(), TAG_A, MPI_COMM_WORLD, &rq[0]));
    MPI_OK(MPI_Isend(src, 1, v, conf_right(), TAG_A, MPI_COMM_WORLD, &rq[1]));
    MPI_OK(MPI_Type_free(&v));
    MPI_OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    for (int i = 0; i < 8; i++)
        CHECK(dst[i] == (i % 2 == 0 ? conf_val(conf_left(), i) : SENTINEL), "element %d = %d", i, dst[i]);
}

/* Names of derived types: empty by default, settable. */
static void check_type_names(void)
{
    MPI_Datatype c;
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    MPI_OK(MPI_Type_contiguous(3, MPI_INT, &c));
    MPI_OK(MPI_Type_get_name(c, name, &len));
    CHECK(len == 0 && name[0] == '\0', "new type's name \"%s\" (%d)", name, len);
    MPI_OK(MPI_Type_set_name(c, "three ints"));
    MPI_OK(MPI_Type_get_name(c, name, &len));
    CHECK(strcmp(name, "three ints") == 0 && len == 10, "name \"%s\"", name);
    MPI_OK(MPI_Type_free(&c));
}

int main(int argc, char **argv)
{
    conf_start(&argc, &argv, "conf_dtype");
    RUN(check_predefined);
    RUN(check_predefined_traffic);
    RUN(check_pair_types);
    RUN(check_vector);
    RUN(check_large_vector);
    RUN(check_hvector_contiguous);
    RUN(check_indexed);
    RUN(check_struct_resized);
    RUN(check_get_elements);
    RUN(check_pack);
    RUN(check_free_while_pending);
    RUN(check_type_names);
    return conf_finish();
}
