/* Communicators, groups and attributes of the MPI layer, with exact checks:
 * Comm_dup (copy callbacks), split, split_type, create, create_group,
 * compare, group, names, free (delete callbacks, in reverse order of
 * setting), the Group_* calls, keyvals and the predefined attributes. */
#include <string.h>

#include "../check.h"

static int g_size;

/* ---- attributes --------------------------------------------------------- */
static int g_deleted[8];
static int g_ndeleted;

static int copy_plus_one(MPI_Comm c, int k, void *extra, void *in, void *out, int *flag)
{
    (void)c, (void)k, (void)extra;
    *(void **)out = (void *)((char *)in + 1);
    *flag = 1;
    return MPI_SUCCESS;
}

static int record_delete(MPI_Comm c, int k, void *val, void *extra)
{
    (void)c, (void)k, (void)extra;
    g_deleted[g_ndeleted++ % 8] = (int)(long)val;
    return MPI_SUCCESS;
}

static int failing_delete(MPI_Comm c, int k, void *val, void *extra)
{
    (void)c, (void)k, (void)val, (void)extra;
    return MPI_ERR_OTHER;
}

static void test_predefined_attrs(void)
{
    int *v = NULL, flag = 0;
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &v, &flag));
    CHECK(flag && *v >= 32767);
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_HOST, &v, &flag));
    CHECK(flag);
    CHECK_EQ(*v, MPI_PROC_NULL);
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_IO, &v, &flag));
    CHECK(flag);
    CHECK_EQ(*v, MPI_ANY_SOURCE);
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &v, &flag));
    CHECK(flag);
    CHECK_EQ(*v, 0);
    /* MPI_UNIVERSE_SIZE (the job's size here) and MPI_APPNUM (0 here) are
     * optional: MPICH's launcher sets neither (flag 0); both are MPI. */
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &v, &flag));
    if (flag) CHECK(*v >= g_size);
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &v, &flag));
    if (flag) CHECK_EQ(*v, 0);
    OK(MPI_Attr_get(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &v, &flag));
    CHECK(flag);
    /* Predefined keys cannot be set or deleted. */
    CHECK_EQ(err_class(MPI_Comm_set_attr(MPI_COMM_WORLD, MPI_TAG_UB, NULL)), MPI_ERR_KEYVAL);
}

static void test_attrs(void)
{
    int kcopy, knone, kdel, flag = 0;
    void *v = NULL;
    OK(MPI_Comm_create_keyval(copy_plus_one, record_delete, &kcopy, NULL));
    OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, record_delete, &knone, NULL));
    OK(MPI_Keyval_create(MPI_DUP_FN, MPI_NULL_DELETE_FN, &kdel, NULL));
    MPI_Comm a;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &a));
    OK(MPI_Comm_set_attr(a, kcopy, (void *)100L));
    OK(MPI_Comm_set_attr(a, knone, (void *)200L));
    OK(MPI_Attr_put(a, kdel, (void *)300L));
    OK(MPI_Comm_get_attr(a, kcopy, &v, &flag));
    CHECK(flag && v == (void *)100L);

    /* Replacing a value runs the delete callback on the old one. */
    g_ndeleted = 0;
    OK(MPI_Comm_set_attr(a, knone, (void *)201L));
    CHECK_EQ(g_ndeleted, 1);
    CHECK_EQ(g_deleted[0], 200);

    /* Dup: copy_plus_one copies (+1), the null copy does not, MPI_DUP_FN copies as is. */
    MPI_Comm b;
    OK(MPI_Comm_dup(a, &b));
    OK(MPI_Comm_get_attr(b, kcopy, &v, &flag));
    CHECK(flag && v == (void *)101L);
    OK(MPI_Comm_get_attr(b, knone, &v, &flag));
    CHECK(!flag);
    OK(MPI_Attr_get(b, kdel, &v, &flag));
    CHECK(flag && v == (void *)300L);

    /* A freed keyval keeps working for the attributes set under it. */
    OK(MPI_Comm_free_keyval(&kcopy));
    CHECK_EQ(kcopy, MPI_KEYVAL_INVALID);

    /* Delete, then free: callbacks in reverse order of setting. */
    g_ndeleted = 0;
    OK(MPI_Comm_delete_attr(b, kdel));
    OK(MPI_Attr_get(b, kdel, &v, &flag));
    CHECK(!flag);
    OK(MPI_Comm_free(&b));
    CHECK_EQ(b, MPI_COMM_NULL);
    CHECK_EQ(g_ndeleted, 1);
    CHECK_EQ(g_deleted[0], 101);
    g_ndeleted = 0;
    OK(MPI_Comm_free(&a));
    CHECK_EQ(g_ndeleted, 2);
    CHECK_EQ(g_deleted[0], 201);   /* knone was set after kcopy */
    CHECK_EQ(g_deleted[1], 100);

    /* A failing delete callback fails Comm_free, which leaves the communicator. */
    int kfail;
    OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, failing_delete, &kfail, NULL));
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &a));
    OK(MPI_Comm_set_attr(a, kfail, (void *)1L));
    CHECK_EQ(err_class(MPI_Comm_free(&a)), MPI_ERR_OTHER);
    CHECK(a != MPI_COMM_NULL);
    OK(MPI_Comm_free_keyval(&kfail));
    OK(MPI_Comm_free_keyval(&knone));
    OK(MPI_Keyval_free(&kdel));
    /* a keeps its attribute and is left for MPI_Finalize to free. */
    CHECK_EQ(err_class(MPI_Comm_set_attr(MPI_COMM_WORLD, kdel, NULL)), MPI_ERR_KEYVAL);
}

/* ---- communicators ------------------------------------------------------- */
static void check_members(MPI_Comm c, int n, const int *world)
{
    int size, rank, wrank;
    OK(MPI_Comm_size(c, &size));
    CHECK_EQ(size, n);
    MPI_Group g, wg;
    OK(MPI_Comm_group(c, &g));
    OK(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    int idx[64], out[64];
    for (int i = 0; i < n; ++i) idx[i] = i;
    OK(MPI_Group_translate_ranks(g, n, idx, wg, out));
    for (int i = 0; i < n; ++i) CHECK_EQ(out[i], world[i]);
    OK(MPI_Comm_rank(c, &rank));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &wrank));
    CHECK_EQ(world[rank], wrank);
    /* The communicator works: everyone's world rank, in order. */
    int got[64];
    OK(MPI_Allgather(&wrank, 1, MPI_INT, got, 1, MPI_INT, c));
    for (int i = 0; i < n; ++i) CHECK_EQ(got[i], world[i]);
    OK(MPI_Group_free(&g));
    OK(MPI_Group_free(&wg));
}

static void test_split(void)
{
    /* Colour by parity, keys reversing the order. */
    MPI_Comm s;
    OK(MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_size - g_rank, &s));
    int world[64], n = 0;
    for (int r = g_size - 1; r >= 0; --r)
        if (r % 2 == g_rank % 2) world[n++] = r;
    check_members(s, n, world);
    int res;
    OK(MPI_Comm_compare(s, s, &res));
    CHECK_EQ(res, MPI_IDENT);
    OK(MPI_Comm_compare(MPI_COMM_WORLD, s, &res));
    CHECK_EQ(res, g_size == 1 ? MPI_CONGRUENT : MPI_UNEQUAL);
    OK(MPI_Comm_free(&s));

    /* MPI_UNDEFINED joins nothing. */
    OK(MPI_Comm_split(MPI_COMM_WORLD, g_rank == 0 ? MPI_UNDEFINED : 1, 0, &s));
    if (g_rank == 0) {
        CHECK_EQ(s, MPI_COMM_NULL);
    } else {
        for (int i = 1; i < g_size; ++i) world[i - 1] = i;
        check_members(s, g_size - 1, world);
        OK(MPI_Comm_free(&s));
    }

#ifdef RDMX_MPI
    /* A negative colour is an error here (MPICH does not check it). */
    CHECK_EQ(err_class(MPI_Comm_split(MPI_COMM_WORLD, -5, 0, &s)), MPI_ERR_ARG);
#endif
}

static void test_dup_compare_names(void)
{
    MPI_Comm d;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
    int res, flag = 1;
    OK(MPI_Comm_compare(MPI_COMM_WORLD, d, &res));
    CHECK_EQ(res, MPI_CONGRUENT);
    OK(MPI_Comm_test_inter(d, &flag));
    CHECK_EQ(flag, 0);
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    OK(MPI_Comm_get_name(MPI_COMM_WORLD, name, &len));
    CHECK(strcmp(name, "MPI_COMM_WORLD") == 0 && len == 14);
    OK(MPI_Comm_get_name(MPI_COMM_SELF, name, &len));
    CHECK(strcmp(name, "MPI_COMM_SELF") == 0);
    OK(MPI_Comm_get_name(d, name, &len));
    CHECK_EQ(len, 0);
    OK(MPI_Comm_set_name(d, "my dup"));
    OK(MPI_Comm_get_name(d, name, &len));
    CHECK(strcmp(name, "my dup") == 0 && len == 6);
    MPI_Comm dd;
    OK(MPI_Comm_dup_with_info(d, MPI_INFO_NULL, &dd));
    OK(MPI_Comm_compare(d, dd, &res));
    CHECK_EQ(res, MPI_CONGRUENT);
    OK(MPI_Comm_free(&dd));
    OK(MPI_Comm_free(&d));

    /* A reversed world: same members, another order. */
    OK(MPI_Comm_split(MPI_COMM_WORLD, 0, -g_rank, &d));
    OK(MPI_Comm_compare(MPI_COMM_WORLD, d, &res));
    CHECK_EQ(res, g_size == 1 ? MPI_CONGRUENT : MPI_SIMILAR);
    OK(MPI_Comm_free(&d));

    /* WORLD and SELF cannot be freed; a freed handle is invalid. */
    MPI_Comm w = MPI_COMM_WORLD;
    CHECK_EQ(err_class(MPI_Comm_free(&w)), MPI_ERR_COMM);
    CHECK_EQ(err_class(MPI_Comm_compare(MPI_COMM_NULL, MPI_COMM_WORLD, &res)), MPI_ERR_COMM);
    OK(MPI_Comm_compare(MPI_COMM_SELF, MPI_COMM_SELF, &res));
    CHECK_EQ(res, MPI_IDENT);
}

static void test_split_type(void)
{
    MPI_Comm node;
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &node));
    CHECK(node != MPI_COMM_NULL);
    int n;
    OK(MPI_Comm_size(node, &n));
    CHECK(n >= 1 && n <= g_size);
    /* Every rank of the test runs on one host unless RDMX_NODE_ID splits it. */
    if (getenv("RDMX_NODE_ID") == NULL) CHECK_EQ(n, g_size);
    OK(MPI_Comm_free(&node));
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_UNDEFINED, 0, MPI_INFO_NULL, &node));
    CHECK_EQ(node, MPI_COMM_NULL);
}

static void test_create(void)
{
    /* The even ranks, in reverse order, through Group_incl and Comm_create. */
    MPI_Group wg, eg;
    OK(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    int ranks[64], n = 0;
    for (int r = g_size - 1; r >= 0; --r)
        if (r % 2 == 0) ranks[n++] = r;
    OK(MPI_Group_incl(wg, n, ranks, &eg));
    MPI_Comm c;
    OK(MPI_Comm_create(MPI_COMM_WORLD, eg, &c));
    if (g_rank % 2 == 0) {
        check_members(c, n, ranks);
        OK(MPI_Comm_free(&c));
    } else {
        CHECK_EQ(c, MPI_COMM_NULL);
    }
    /* Comm_create_group with the whole group. */
    OK(MPI_Comm_create_group(MPI_COMM_WORLD, wg, 7, &c));
    int res;
    OK(MPI_Comm_compare(MPI_COMM_WORLD, c, &res));
    CHECK_EQ(res, MPI_CONGRUENT);
    OK(MPI_Comm_free(&c));
    OK(MPI_Group_free(&eg));
    OK(MPI_Group_free(&wg));
}

/* ---- groups ------------------------------------------------------------------ */
static void check_group(MPI_Group g, int n, const int *world)
{
    int size;
    OK(MPI_Group_size(g, &size));
    CHECK_EQ(size, n);
    MPI_Group wg;
    OK(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    int idx[64], out[64];
    for (int i = 0; i < n; ++i) idx[i] = i;
    OK(MPI_Group_translate_ranks(g, n, idx, wg, out));
    for (int i = 0; i < n; ++i) CHECK_EQ(out[i], world[i]);
    int rank, expect = MPI_UNDEFINED;
    for (int i = 0; i < n; ++i)
        if (world[i] == g_rank) expect = i;
    OK(MPI_Group_rank(g, &rank));
    CHECK_EQ(rank, expect);
    OK(MPI_Group_free(&wg));
}

static void test_groups(void)
{
    /* A fixed world of 6 ranks would need 6 processes; build groups from
     * whatever size there is: w = 0..p-1. */
    MPI_Group w, a, b, u, in, d, r;
    OK(MPI_Comm_group(MPI_COMM_WORLD, &w));
    int all[64], rev[64], p = g_size;
    for (int i = 0; i < p; ++i) all[i] = i, rev[i] = p - 1 - i;
    check_group(w, p, all);

    /* a = reversed world, b = the first half (at least one). */
    OK(MPI_Group_incl(w, p, rev, &a));
    check_group(a, p, rev);
    int half = (p + 1) / 2;
    int ex[64];
    for (int i = half; i < p; ++i) ex[i - half] = i;
    OK(MPI_Group_excl(w, p - half, ex, &b));
    check_group(b, half, all);

    int res;
    OK(MPI_Group_compare(w, w, &res));
    CHECK_EQ(res, MPI_IDENT);
    OK(MPI_Group_compare(w, a, &res));
    CHECK_EQ(res, p == 1 ? MPI_IDENT : MPI_SIMILAR);
    OK(MPI_Group_compare(w, b, &res));
    CHECK_EQ(res, half == p ? MPI_IDENT : MPI_UNEQUAL);

    /* union(b, a): b's members, then a's others in a's order. */
    OK(MPI_Group_union(b, a, &u));
    int uexp[64] = {0}, n = 0;
    for (int i = 0; i < half; ++i) uexp[n++] = i;
    for (int i = 0; i < p; ++i)
        if (rev[i] >= half) uexp[n++] = rev[i];
    check_group(u, n, uexp);
    /* intersection(a, b): a's order. */
    OK(MPI_Group_intersection(a, b, &in));
    n = 0;
    for (int i = 0; i < p; ++i)
        if (rev[i] < half) uexp[n++] = rev[i];
    check_group(in, n, uexp);
    /* difference(a, b). */
    OK(MPI_Group_difference(a, b, &d));
    n = 0;
    for (int i = 0; i < p; ++i)
        if (rev[i] >= half) uexp[n++] = rev[i];
    if (n == 0) CHECK_EQ(d, MPI_GROUP_EMPTY);
    check_group(d, n, uexp);

    /* Ranges: every other rank from the top, and what is left. */
    int range[1][3] = {{p - 1, 0, -2}};
    OK(MPI_Group_range_incl(w, 1, range, &r));
    n = 0;
    for (int i = p - 1; i >= 0; i -= 2) uexp[n++] = i;
    check_group(r, n, uexp);
    OK(MPI_Group_free(&r));
    OK(MPI_Group_range_excl(w, 1, range, &r));
    n = 0;
    for (int i = 0; i < p; ++i)
        if ((p - 1 - i) % 2 != 0) uexp[n++] = i;
    check_group(r, n, uexp);
    OK(MPI_Group_free(&r));

    /* Translate: PROC_NULL passes through, ranks outside become UNDEFINED. */
    int q[2] = {MPI_PROC_NULL, p - 1}, out[2];
    OK(MPI_Group_translate_ranks(w, 2, q, b, out));
    CHECK_EQ(out[0], MPI_PROC_NULL);
    CHECK_EQ(out[1], p - 1 < half ? p - 1 : MPI_UNDEFINED);

    /* The empty group, and errors. */
    int size;
    OK(MPI_Group_size(MPI_GROUP_EMPTY, &size));
    CHECK_EQ(size, 0);
    OK(MPI_Group_rank(MPI_GROUP_EMPTY, &size));
    CHECK_EQ(size, MPI_UNDEFINED);
    int bad[1] = {p};
    MPI_Group x;
    CHECK_EQ(err_class(MPI_Group_incl(w, 1, bad, &x)), MPI_ERR_RANK);
#ifdef RDMX_MPI
    int dup2[2] = {0, 0};   /* a repeated rank (MPICH does not check it) */
    CHECK_EQ(err_class(MPI_Group_incl(w, 2, dup2, &x)), MPI_ERR_RANK);
#endif
    int zero_stride[1][3] = {{0, 0, 0}};
    CHECK_EQ(err_class(MPI_Group_range_incl(w, 1, zero_stride, &x)), MPI_ERR_ARG);
    CHECK_EQ(err_class(MPI_Group_size(MPI_GROUP_NULL, &size)), MPI_ERR_GROUP);

    MPI_Group *gs[] = {&w, &a, &b, &u, &in, &d};
    for (unsigned i = 0; i < sizeof gs / sizeof gs[0]; ++i) {
        OK(MPI_Group_free(gs[i]));
        CHECK_EQ(*gs[i], MPI_GROUP_NULL);
    }
    CHECK_EQ(err_class(MPI_Group_free(&a)), MPI_ERR_GROUP);
}

int main(int argc, char **argv)
{
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &g_rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &g_size));
    CHECK(g_size <= 64);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    test_predefined_attrs();
    test_attrs();
    test_split();
    test_dup_compare_names();
    test_split_type();
    test_create();
    test_groups();
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (g_rank == 0) printf("comm_test: %d ranks ok\n", g_size);
    OK(MPI_Finalize());
    return 0;
}
