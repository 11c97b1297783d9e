/* Communicators, groups, attributes and names: Comm_dup/split/split_type
 * (MPI_COMM_TYPE_SHARED)/create/compare/free/rank/size/group,
 * Group_incl/excl/translate_ranks/compare/size/rank/free, the predefined
 * attributes (MPI_TAG_UB, MPI_HOST, MPI_IO, MPI_WTIME_IS_GLOBAL), user
 * keyvals whose copy and delete callbacks run through dup, delete_attr and
 * free, Comm_set_name/get_name. Collective traffic on the new
 * communicators is point-to-point only, so a broken collective does not
 * fail these checks. */
#include "conf.h"

#define TAG_A 31
#define TAG_B 32

/* One int around the ring of `comm`: each rank sends its world rank to the
 * right and gets the left's. */
static int ring_world_rank_of_left(MPI_Comm comm)
{
    int r, s, got = -1;
    MPI_OK(MPI_Comm_rank(comm, &r));
    MPI_OK(MPI_Comm_size(comm, &s));
    MPI_OK(MPI_Sendrecv(&conf_rank, 1, MPI_INT, (r + 1) % s, TAG_A, &got, 1, MPI_INT, (r + s - 1) % s, TAG_A, comm,
                        MPI_STATUS_IGNORE));
    return got;
}

static void check_rank_size_compare(void)
{
    int r = -1, s = -1, res = -1;
    MPI_OK(MPI_Comm_rank(MPI_COMM_WORLD, &r));
    MPI_OK(MPI_Comm_size(MPI_COMM_WORLD, &s));
    CHECK(r >= 0 && r < s, "rank %d size %d", r, s);
    MPI_OK(MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, &res));
    CHECK_INT(res, MPI_IDENT);
    MPI_OK(MPI_Comm_compare(MPI_COMM_SELF, MPI_COMM_SELF, &res));
    CHECK_INT(res, MPI_IDENT);
    MPI_OK(MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_SELF, &res));
    CHECK_INT(res, conf_size == 1 ? MPI_CONGRUENT : MPI_UNEQUAL);
}

/* A dup is congruent, has its own matching space (a message sent on the
 * parent is not received on the dup), and Comm_free nulls the handle. */
static void check_dup(void)
{
    MPI_Comm d = MPI_COMM_NULL;
    int res = -1, r = -1, s = -1, a = 1, b = 2, got[2] = {0, 0};
    MPI_Request rq[2];
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
    CHECK(d != MPI_COMM_NULL && d != MPI_COMM_WORLD, "MPI_Comm_dup gave handle %#x", (unsigned)d);
    MPI_OK(MPI_Comm_compare(MPI_COMM_WORLD, d, &res));
    CHECK_INT(res, MPI_CONGRUENT);
    MPI_OK(MPI_Comm_rank(d, &r));
    MPI_OK(MPI_Comm_size(d, &s));
    CHECK_INT(r, conf_rank);
    CHECK_INT(s, conf_size);
    /* The dup's receive is posted first, the parent's message sent first. */
    MPI_OK(MPI_Irecv(&got[1], 1, MPI_INT, conf_left(), TAG_A, d, &rq[1]));
    MPI_OK(MPI_Irecv(&got[0], 1, MPI_INT, conf_left(), TAG_A, MPI_COMM_WORLD, &rq[0]));
    MPI_OK(MPI_Send(&a, 1, MPI_INT, conf_right(), TAG_A, MPI_COMM_WORLD));
    MPI_OK(MPI_Send(&b, 1, MPI_INT, conf_right(), TAG_A, d));
    MPI_OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    CHECK(got[0] == 1 && got[1] == 2, "world got %d, dup got %d: want 1 and 2", got[0], got[1]);
    CHECK_INT(ring_world_rank_of_left(d), conf_left());
    MPI_OK(MPI_Comm_free(&d));
    CHECK(d == MPI_COMM_NULL, "MPI_Comm_free did not set MPI_COMM_NULL");
}

/* split by parity, ordered by descending world rank; MPI_UNDEFINED gives
 * MPI_COMM_NULL. */
static void check_split(void)
{
    MPI_Comm c = MPI_COMM_NULL, none = MPI_COMM_WORLD;
    int color = conf_rank % 2, r = -1, s = -1, res = -1;
    int members = (conf_size - color + 1) / 2; /* ranks of this parity */
    MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, color, -conf_rank, &c));
    MPI_OK(MPI_Comm_rank(c, &r));
    MPI_OK(MPI_Comm_size(c, &s));
    CHECK_INT(s, members);
    /* Descending world rank: the highest of this parity is rank 0. */
    int highest = conf_size - 1 - ((conf_size - 1 - color) % 2);
    CHECK_INT(r, (highest - conf_rank) / 2);
    /* Left in c is the next higher world rank of this parity (wrapping). */
    int left = conf_rank + 2 > highest ? color : conf_rank + 2;
    CHECK_INT(ring_world_rank_of_left(c), left);
    MPI_OK(MPI_Comm_compare(MPI_COMM_WORLD, c, &res));
    CHECK_INT(res, conf_size == 1 ? MPI_CONGRUENT : MPI_UNEQUAL);
    MPI_OK(MPI_Comm_free(&c));
    /* Everybody in one color, reversed: same group, other order. */
    MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, 0, conf_size - conf_rank, &c));
    MPI_OK(MPI_Comm_compare(MPI_COMM_WORLD, c, &res));
    CHECK_INT(res, conf_size == 1 ? MPI_CONGRUENT : MPI_SIMILAR);
    MPI_OK(MPI_Comm_rank(c, &r));
    CHECK_INT(r, conf_size - 1 - conf_rank);
    MPI_OK(MPI_Comm_free(&c));
    /* Only rank 0 joins; the others get MPI_COMM_NULL. */
    MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, conf_rank == 0 ? 5 : MPI_UNDEFINED, 0, &none));
    if (conf_rank == 0) {
        MPI_OK(MPI_Comm_size(none, &s));
        CHECK_INT(s, 1);
        MPI_OK(MPI_Comm_free(&none));
    } else {
        CHECK(none == MPI_COMM_NULL, "MPI_UNDEFINED color gave %#x, not MPI_COMM_NULL", (unsigned)none);
    }
}

/* MPI_COMM_TYPE_SHARED: the ranks that share this rank's node. Every rank
 * sends its processor name to every rank; the ones with this rank's name
 * must be exactly the new communicator, in world order. */
static void check_split_type_shared(void)
{
    char mine[MPI_MAX_PROCESSOR_NAME] = {0};
    char *all = calloc((size_t)conf_size, MPI_MAX_PROCESSOR_NAME);
    MPI_Request *rq = malloc(sizeof(MPI_Request) * 2 * (size_t)conf_size);
    MPI_Comm node = MPI_COMM_NULL;
    int len, s = -1, r = -1, want_size = 0, want_rank = 0;
    MPI_OK(MPI_Get_processor_name(mine, &len));
    for (int i = 0; i < conf_size; i++)
        MPI_OK(MPI_Irecv(all + (size_t)i * MPI_MAX_PROCESSOR_NAME, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, i, TAG_B,
                         MPI_COMM_WORLD, &rq[i]));
    for (int i = 0; i < conf_size; i++)
        MPI_OK(MPI_Isend(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, i, TAG_B, MPI_COMM_WORLD, &rq[conf_size + i]));
    MPI_OK(MPI_Waitall(2 * conf_size, rq, MPI_STATUSES_IGNORE));
    for (int i = 0; i < conf_size; i++) {
        if (strcmp(all + (size_t)i * MPI_MAX_PROCESSOR_NAME, mine) == 0) {
            want_size++;
            if (i < conf_rank)
                want_rank++;
        }
    }
    MPI_OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    MPI_OK(MPI_Comm_size(node, &s));
    MPI_OK(MPI_Comm_rank(node, &r));
    CHECK_INT(s, want_size);
    CHECK_INT(r, want_rank);
    MPI_OK(MPI_Comm_free(&node));
    MPI_OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_UNDEFINED, 0, MPI_INFO_NULL, &node));
    CHECK(node == MPI_COMM_NULL, "split_type MPI_UNDEFINED gave %#x", (unsigned)node);
    free(all);
    free(rq);
}

/* Groups: incl (reversed), excl (rank 0), translate_ranks (incl
 * MPI_PROC_NULL and a non-member), compare, size, rank, free. */
static void check_groups(void)
{
    MPI_Group world, rev, ex, empty = MPI_GROUP_EMPTY;
    int n = conf_size, *ranks = malloc(sizeof(int) * (size_t)(n + 1)), *out = malloc(sizeof(int) * (size_t)(n + 1));
    int s = -1, r = -1, res = -1, zero = 0;
    MPI_OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    MPI_OK(MPI_Group_size(world, &s));
    MPI_OK(MPI_Group_rank(world, &r));
    CHECK_INT(s, n);
    CHECK_INT(r, conf_rank);
    for (int i = 0; i < n; i++)
        ranks[i] = n - 1 - i;
    MPI_OK(MPI_Group_incl(world, n, ranks, &rev));
    MPI_OK(MPI_Group_rank(rev, &r));
    CHECK_INT(r, n - 1 - conf_rank);
    MPI_OK(MPI_Group_compare(world, rev, &res));
    CHECK_INT(res, n == 1 ? MPI_IDENT : MPI_SIMILAR);
    MPI_OK(MPI_Group_compare(world, world, &res));
    CHECK_INT(res, MPI_IDENT);
    for (int i = 0; i < n; i++)
        ranks[i] = i;
    ranks[n] = MPI_PROC_NULL;
    MPI_OK(MPI_Group_translate_ranks(world, n + 1, ranks, rev, out));
    for (int i = 0; i < n; i++)
        CHECK(out[i] == n - 1 - i, "translate world %d -> reversed %d, want %d", i, out[i], n - 1 - i);
    CHECK_INT(out[n], MPI_PROC_NULL);
    MPI_OK(MPI_Group_excl(world, 1, &zero, &ex));
    MPI_OK(MPI_Group_size(ex, &s));
    CHECK_INT(s, n - 1);
    MPI_OK(MPI_Group_rank(ex, &r));
    CHECK_INT(r, conf_rank == 0 ? MPI_UNDEFINED : conf_rank - 1);
    /* World rank 0 is not in ex. */
    MPI_OK(MPI_Group_translate_ranks(world, 1, &zero, ex, out));
    CHECK_INT(out[0], MPI_UNDEFINED);
    MPI_OK(MPI_Group_compare(world, ex, &res));
    CHECK_INT(res, MPI_UNEQUAL);
    MPI_OK(MPI_Group_size(empty, &s));
    CHECK_INT(s, 0);
    MPI_OK(MPI_Group_rank(empty, &r));
    CHECK_INT(r, MPI_UNDEFINED);
    MPI_OK(MPI_Group_free(&rev));
    MPI_OK(MPI_Group_free(&ex));
    CHECK(rev == MPI_GROUP_NULL && ex == MPI_GROUP_NULL, "MPI_Group_free did not set MPI_GROUP_NULL");
    MPI_OK(MPI_Group_free(&world));
    free(ranks);
    free(out);
}

/* Comm_create from the even ranks of world (odd ones get MPI_COMM_NULL),
 * and the new communicator's group is the one passed. */
static void check_create(void)
{
    MPI_Group world, evens, got;
    MPI_Comm c = MPI_COMM_WORLD;
    int n_even = (conf_size + 1) / 2, *ranks = malloc(sizeof(int) * (size_t)n_even), res = -1, r = -1;
    for (int i = 0; i < n_even; i++)
        ranks[i] = 2 * i;
    MPI_OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    MPI_OK(MPI_Group_incl(world, n_even, ranks, &evens));
    MPI_OK(MPI_Comm_create(MPI_COMM_WORLD, evens, &c));
    if (conf_rank % 2 == 1) {
        CHECK(c == MPI_COMM_NULL, "non-member got %#x, not MPI_COMM_NULL", (unsigned)c);
    } else {
        MPI_OK(MPI_Comm_rank(c, &r));
        CHECK_INT(r, conf_rank / 2);
        MPI_OK(MPI_Comm_group(c, &got));
        MPI_OK(MPI_Group_compare(got, evens, &res));
        CHECK_INT(res, MPI_IDENT);
        MPI_OK(MPI_Group_free(&got));
        int left = (conf_rank / 2 + n_even - 1) % n_even * 2;
        CHECK_INT(ring_world_rank_of_left(c), left);
        MPI_OK(MPI_Comm_free(&c));
    }
    MPI_OK(MPI_Group_free(&evens));
    MPI_OK(MPI_Group_free(&world));
    free(ranks);
}

/* A communicator freed with operations pending on it: they complete
 * (Comm_free only marks it). */
static void check_free_while_pending(void)
{
    MPI_Comm d;
    int out = conf_val(conf_rank, 0), in = -1;
    MPI_Request rq[2];
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
    MPI_OK(MPI_Irecv(&in, 1, MPI_INT, conf_left(), TAG_A, d, &rq[0]));
    MPI_OK(MPI_Isend(&out, 1, MPI_INT, conf_right(), TAG_A, d, &rq[1]));
    MPI_OK(MPI_Comm_free(&d));
    CHECK(d == MPI_COMM_NULL, "MPI_Comm_free did not set MPI_COMM_NULL");
    MPI_OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    CHECK_INT(in, conf_val(conf_left(), 0));
}

/* Equal keys keep the parent's order; colors need not be small. */
static void check_split_ties(void)
{
    MPI_Comm c;
    int r = -1, s = -1;
    MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, 1000000 + conf_rank / 2, 0, &c));
    MPI_OK(MPI_Comm_rank(c, &r));
    MPI_OK(MPI_Comm_size(c, &s));
    CHECK_INT(r, conf_rank % 2);
    CHECK_INT(s, conf_rank / 2 * 2 + 1 < conf_size ? 2 : 1);
    MPI_OK(MPI_Comm_free(&c));
}

static void check_predefined_attrs(void)
{
    int *v = NULL, flag = 0;
    MPI_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &v, &flag));
    CHECK(flag && v, "MPI_TAG_UB not set");
    CHECK(*v >= 32767, "MPI_TAG_UB = %d, below the standard's 32767", *v);
    flag = 0;
    MPI_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &v, &flag));
    CHECK(flag, "MPI_WTIME_IS_GLOBAL not set");
    CHECK(*v == 0 || *v == 1, "MPI_WTIME_IS_GLOBAL = %d", *v);
    flag = 0;
    MPI_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_HOST, &v, &flag));
    CHECK(flag, "MPI_HOST not set");
    CHECK(*v == MPI_PROC_NULL || (*v >= 0 && *v < conf_size), "MPI_HOST = %d", *v);
    flag = 0;
    MPI_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_IO, &v, &flag));
    CHECK(flag, "MPI_IO not set");
    CHECK(*v == MPI_PROC_NULL || *v == MPI_ANY_SOURCE || (*v >= 0 && *v < conf_size), "MPI_IO = %d", *v);
    /* A message with the largest tag goes through. */
    MPI_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &v, &flag));
    int tag_ub = *v, x = 9, y = 0;
    MPI_OK(MPI_Sendrecv(&x, 1, MPI_INT, conf_right(), tag_ub, &y, 1, MPI_INT, conf_left(), tag_ub, MPI_COMM_WORLD,
                        MPI_STATUS_IGNORE));
    CHECK_INT(y, 9);
}

/* User keyvals. The copy callback stores value + 1 in the new communicator
 * and counts; the delete callback counts. */
static int n_copy, n_delete;
static int attr_value = 100;
static int attr_copies[4];

static int copy_fn(MPI_Comm old, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)old;
    (void)keyval;
    CHECK(*(int *)extra == 77, "extra_state %d reached the copy callback, want 77", *(int *)extra);
    attr_copies[n_copy % 4] = *(int *)in + 1;
    *(void **)out = &attr_copies[n_copy % 4];
    *flag = 1;
    n_copy++;
    return MPI_SUCCESS;
}

static int delete_fn(MPI_Comm c, int keyval, void *val, void *extra)
{
    (void)c;
    (void)keyval;
    (void)val;
    CHECK(*(int *)extra == 77, "extra_state %d reached the delete callback", *(int *)extra);
    n_delete++;
    return MPI_SUCCESS;
}

static void check_keyvals(void)
{
    static int extra = 77;
    int kv = MPI_KEYVAL_INVALID, kv_null = MPI_KEYVAL_INVALID, kv_dupfn = MPI_KEYVAL_INVALID, flag = 0, *v = NULL;
    MPI_Comm d1, d2;
    n_copy = n_delete = 0;
    MPI_OK(MPI_Comm_create_keyval(copy_fn, delete_fn, &kv, &extra));
    MPI_OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &kv_null, NULL));
    MPI_OK(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &kv_dupfn, NULL));
    CHECK(kv != MPI_KEYVAL_INVALID && kv != kv_null && kv_null != kv_dupfn, "keyvals %d %d %d", kv, kv_null, kv_dupfn);
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d1));
    MPI_OK(MPI_Comm_get_attr(d1, kv, &v, &flag));
    CHECK(!flag, "a keyval never set is found");
    MPI_OK(MPI_Comm_set_attr(d1, kv, &attr_value));
    MPI_OK(MPI_Comm_set_attr(d1, kv_null, &attr_value));
    MPI_OK(MPI_Comm_set_attr(d1, kv_dupfn, &attr_value));
    MPI_OK(MPI_Comm_get_attr(d1, kv, &v, &flag));
    CHECK(flag && v == &attr_value, "attribute read back as %p (flag %d)", (void *)v, flag);
    MPI_OK(MPI_Comm_dup(d1, &d2));
    CHECK_INT(n_copy, 1);
    MPI_OK(MPI_Comm_get_attr(d2, kv, &v, &flag));
    CHECK(flag && *v == 101, "copied attribute: flag %d value %d, want 101", flag, flag ? *v : -1);
    MPI_OK(MPI_Comm_get_attr(d2, kv_null, &v, &flag));
    CHECK(!flag, "MPI_COMM_NULL_COPY_FN attribute was copied");
    MPI_OK(MPI_Comm_get_attr(d2, kv_dupfn, &v, &flag));
    CHECK(flag && v == &attr_value, "MPI_COMM_DUP_FN attribute: flag %d", flag);
    /* Replacing a value calls delete on the old one; so does delete_attr. */
    MPI_OK(MPI_Comm_set_attr(d1, kv, &attr_value));
    CHECK_INT(n_delete, 1);
    MPI_OK(MPI_Comm_delete_attr(d1, kv));
    CHECK_INT(n_delete, 2);
    MPI_OK(MPI_Comm_get_attr(d1, kv, &v, &flag));
    CHECK(!flag, "attribute still there after MPI_Comm_delete_attr");
    /* Freeing the keyval keeps it usable by communicators that hold it. */
    MPI_OK(MPI_Comm_free_keyval(&kv));
    CHECK_INT(kv, MPI_KEYVAL_INVALID);
    MPI_OK(MPI_Comm_free(&d2));
    CHECK_INT(n_delete, 3);
    MPI_OK(MPI_Comm_free(&d1));
    CHECK_INT(n_delete, 3);
    MPI_OK(MPI_Comm_free_keyval(&kv_null));
    MPI_OK(MPI_Comm_free_keyval(&kv_dupfn));
}

static void check_names(void)
{
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    MPI_Comm d;
    MPI_OK(MPI_Comm_get_name(MPI_COMM_WORLD, name, &len));
    CHECK(strcmp(name, "MPI_COMM_WORLD") == 0 && len == 14, "world's name \"%s\" (%d)", name, len);
    MPI_OK(MPI_Comm_get_name(MPI_COMM_SELF, name, &len));
    CHECK(strcmp(name, "MPI_COMM_SELF") == 0 && len == 13, "self's name \"%s\" (%d)", name, len);
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
    MPI_OK(MPI_Comm_set_name(d, "conformance dup"));
    MPI_OK(MPI_Comm_get_name(d, name, &len));
    CHECK(strcmp(name, "conformance dup") == 0 && len == 15, "dup's name \"%s\" (%d)", name, len);
    MPI_OK(MPI_Comm_set_name(d, "x"));
    MPI_OK(MPI_Comm_get_name(d, name, &len));
    CHECK(strcmp(name, "x") == 0 && len == 1, "renamed \"%s\" (%d)", name, len);
    MPI_OK(MPI_Comm_free(&d));
}

int main(int argc, char **argv)
{
    conf_start(&argc, &argv, "conf_comm");
    RUN(check_rank_size_compare);
    RUN(check_dup);
    RUN(check_split);
    RUN(check_split_type_shared);
    RUN(check_groups);
    RUN(check_create);
    RUN(check_free_while_pending);
    RUN(check_split_ties);
    RUN(check_predefined_attrs);
    RUN(check_keyvals);
    RUN(check_names);
    return conf_finish();
}
