// Datatypes of the MPI layer, continued: pack/unpack round trips and partial
// unpacks, MPI_Pack/Unpack/Pack_size, Get_elements, names, envelope and
// contents, freeing, addresses.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "datatype.h"
#include "stubs.h"

namespace {

using rdmx::mpi::type_elements;
using rdmx::mpi::type_pack;
using rdmx::mpi::type_unpack;

constexpr int kSentinel = -7;

void free_type(MPI_Datatype t)
{
    EXPECT_EQ(MPI_Type_free(&t), MPI_SUCCESS);
}

MPI_Datatype committed(MPI_Datatype t)
{
    EXPECT_EQ(MPI_Type_commit(&t), MPI_SUCCESS);
    return t;
}

TEST(MpiDatatypePack, RoundTripLeavesHolesAlone)
{
    MPI_Datatype v = MPI_DATATYPE_NULL;
    ASSERT_EQ(MPI_Type_vector(4, 3, 5, MPI_DOUBLE, &v), MPI_SUCCESS);
    v = committed(v);
    constexpr int kCount = 3;
    constexpr int kExtentDoubles = 18;   // (4-1)*5 + 3
    std::vector<double> src(kExtentDoubles * kCount), dst(src.size(), kSentinel);
    for (size_t i = 0; i < src.size(); i++)
        src[i] = static_cast<double>(i);
    std::vector<double> packed(4 * 3 * kCount);
    type_pack(src.data(), kCount, v, packed.data());
    type_unpack(packed.data(), packed.size() * sizeof(double), dst.data(), kCount, v);
    for (size_t i = 0; i < src.size(); i++) {
        bool data = (i % kExtentDoubles) % 5 < 3;
        EXPECT_EQ(dst[i], data ? src[i] : kSentinel) << "at " << i;
    }
    free_type(v);
}

TEST(MpiDatatypePack, PartialUnpackFillsLeadingItems)
{
    MPI_Datatype v;
    ASSERT_EQ(MPI_Type_vector(2, 1, 2, MPI_INT, &v), MPI_SUCCESS);
    int packed[4] = {10, 11, 12, 13};
    int dst[8];
    std::fill(std::begin(dst), std::end(dst), kSentinel);
    // Three ints of two elements: element 0 whole, the first item of element 1.
    type_unpack(packed, 3 * sizeof(int), dst, 2, v);
    EXPECT_EQ(dst[0], 10);
    EXPECT_EQ(dst[2], 11);
    EXPECT_EQ(dst[3], 12);   // element 1 starts at the extent (3 ints)
    EXPECT_EQ(dst[5], kSentinel);
    EXPECT_EQ(dst[1], kSentinel);
    // More input than the elements hold: only count elements are written.
    std::fill(std::begin(dst), std::end(dst), kSentinel);
    type_unpack(packed, sizeof packed, dst, 1, v);
    EXPECT_EQ(dst[0], 10);
    EXPECT_EQ(dst[2], 11);
    EXPECT_EQ(dst[3], kSentinel);
    free_type(v);
}

TEST(MpiDatatypePack, ContiguousFastPathHonoursTrueLb)
{
    // Three ints 8 bytes into the buffer: one block, lb 8, extent 12.
    MPI_Datatype t;
    MPI_Aint disp = 8;
    int bl = 3;
    ASSERT_EQ(MPI_Type_create_hindexed(1, &bl, &disp, MPI_INT, &t), MPI_SUCCESS);
    rdmx::mpi::TypeView tv;
    ASSERT_TRUE(rdmx::mpi::type_view(t, &tv));
    EXPECT_TRUE(tv.contiguous);
    EXPECT_EQ(tv.true_lb, 8);
    EXPECT_EQ(tv.lb, 8);
    int src[12];
    for (int i = 0; i < 12; i++)
        src[i] = i;
    int out[6];
    type_pack(src, 2, t, out);
    EXPECT_EQ(std::vector<int>(out, out + 6), (std::vector<int>{2, 3, 4, 5, 6, 7}));
    // Stretched to 20 bytes, the elements no longer abut.
    MPI_Datatype r;
    ASSERT_EQ(MPI_Type_create_resized(t, 0, 20, &r), MPI_SUCCESS);
    ASSERT_TRUE(rdmx::mpi::type_view(r, &tv));
    EXPECT_FALSE(tv.contiguous);
    type_pack(src, 2, r, out);
    EXPECT_EQ(std::vector<int>(out, out + 6), (std::vector<int>{2, 3, 4, 7, 8, 9}));
    free_type(r);
    free_type(t);
}

TEST(MpiDatatypePack, MpiPackAndUnpack)
{
    MPI_Datatype v;
    ASSERT_EQ(MPI_Type_vector(3, 1, 2, MPI_INT, &v), MPI_SUCCESS);
    int a[5] = {1, 2, 3, 4, 5};
    double d = 6.5;
    char buf[64];
    int pos = 0;
    EXPECT_EQ(MPI_Pack(a, 1, v, buf, sizeof buf, &pos, MPI_COMM_WORLD), MPI_ERR_TYPE);   // not committed
    v = committed(v);
    ASSERT_EQ(MPI_Pack(a, 1, v, buf, sizeof buf, &pos, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_EQ(pos, 12);
    ASSERT_EQ(MPI_Pack(&d, 1, MPI_DOUBLE, buf, sizeof buf, &pos, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_EQ(pos, 20);
    int size = 0;
    ASSERT_EQ(MPI_Pack_size(2, v, MPI_COMM_WORLD, &size), MPI_SUCCESS);
    EXPECT_EQ(size, 24);

    int b[5];
    std::fill(std::begin(b), std::end(b), kSentinel);
    double e = 0;
    int in = 0;
    ASSERT_EQ(MPI_Unpack(buf, pos, &in, b, 1, v, MPI_COMM_WORLD), MPI_SUCCESS);
    ASSERT_EQ(MPI_Unpack(buf, pos, &in, &e, 1, MPI_DOUBLE, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_EQ(in, 20);
    EXPECT_EQ(std::vector<int>(b, b + 5), (std::vector<int>{1, kSentinel, 3, kSentinel, 5}));
    EXPECT_EQ(e, 6.5);

    // Errors: no room, reading past the end, bad count, bad communicator.
    pos = 16;
    EXPECT_EQ(MPI_Pack(a, 1, v, buf, 20, &pos, MPI_COMM_WORLD), MPI_ERR_TRUNCATE);
    EXPECT_EQ(pos, 16);
    in = 12;
    EXPECT_EQ(MPI_Unpack(buf, 20, &in, b, 1, v, MPI_COMM_WORLD), MPI_ERR_TRUNCATE);
    EXPECT_EQ(MPI_Pack(a, -1, v, buf, 64, &pos, MPI_COMM_WORLD), MPI_ERR_COUNT);
    EXPECT_EQ(MPI_Pack(a, 1, v, buf, 64, &pos, MPI_COMM_NULL), MPI_ERR_COMM);
    EXPECT_EQ(MPI_Pack_size(1, MPI_DATATYPE_NULL, MPI_COMM_WORLD, &size), MPI_ERR_TYPE);
    EXPECT_EQ(test_last_error().call, "MPI_Pack_size");
    // Zero elements pack nothing, even at the end of the buffer.
    pos = 64;
    EXPECT_EQ(MPI_Pack(a, 0, v, buf, 64, &pos, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_EQ(pos, 64);
    free_type(v);
}

TEST(MpiDatatypePack, GetElements)
{
    EXPECT_EQ(type_elements(MPI_INT, 12), 3);
    EXPECT_EQ(type_elements(MPI_INT, 13), MPI_UNDEFINED);
    EXPECT_EQ(type_elements(MPI_INT, 0), 0);
    EXPECT_EQ(type_elements(MPI_2INT, 16), 4);
    EXPECT_EQ(type_elements(MPI_2INT, 4), 1);
    EXPECT_EQ(type_elements(MPI_FLOAT_INT, 8), 2);
    EXPECT_EQ(type_elements(MPI_FLOAT_INT, 4), 1);
    EXPECT_EQ(type_elements(MPI_DOUBLE_INT, 20), 3);   // one pair and a double
    EXPECT_EQ(type_elements(MPI_DOUBLE_INT, 6), MPI_UNDEFINED);
    EXPECT_EQ(type_elements(MPI_LB, 0), 0);
    EXPECT_EQ(type_elements(MPI_DATATYPE_NULL, 4), MPI_UNDEFINED);

    MPI_Datatype st;
    int bl[2] = {1, 2};
    MPI_Aint disp[2] = {0, 8};
    MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE};
    ASSERT_EQ(MPI_Type_create_struct(2, bl, disp, types, &st), MPI_SUCCESS);   // 20 bytes: 3 elements
    EXPECT_EQ(type_elements(st, 4), 1);
    EXPECT_EQ(type_elements(st, 12), 2);
    EXPECT_EQ(type_elements(st, 20), 3);
    EXPECT_EQ(type_elements(st, 24), 4);
    EXPECT_EQ(type_elements(st, 8), MPI_UNDEFINED);
    EXPECT_EQ(type_elements(st, 44), 7);   // two elements and an int
    free_type(st);

    MPI_Datatype v;
    ASSERT_EQ(MPI_Type_vector(3, 2, 4, MPI_DOUBLE, &v), MPI_SUCCESS);
    EXPECT_EQ(type_elements(v, 40), 5);
    EXPECT_EQ(type_elements(v, 44), MPI_UNDEFINED);
    free_type(v);
}

TEST(MpiDatatypePack, Names)
{
    MPI_Datatype t;
    ASSERT_EQ(MPI_Type_contiguous(2, MPI_INT, &t), MPI_SUCCESS);
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    ASSERT_EQ(MPI_Type_get_name(t, name, &len), MPI_SUCCESS);
    EXPECT_EQ(len, 0);
    EXPECT_STREQ(name, "");
    ASSERT_EQ(MPI_Type_set_name(t, "pair of ints"), MPI_SUCCESS);
    ASSERT_EQ(MPI_Type_get_name(t, name, &len), MPI_SUCCESS);
    EXPECT_STREQ(name, "pair of ints");
    EXPECT_EQ(len, 12);
    std::string longname(300, 'x');
    ASSERT_EQ(MPI_Type_set_name(t, longname.c_str()), MPI_SUCCESS);
    ASSERT_EQ(MPI_Type_get_name(t, name, &len), MPI_SUCCESS);
    EXPECT_EQ(len, MPI_MAX_OBJECT_NAME - 1);
    EXPECT_EQ(MPI_Type_set_name(t, nullptr), MPI_ERR_ARG);
    MPI_Datatype d;
    ASSERT_EQ(MPI_Type_dup(t, &d), MPI_SUCCESS);
    ASSERT_EQ(MPI_Type_get_name(d, name, &len), MPI_SUCCESS);
    EXPECT_EQ(len, 0);   // as in MPICH, a duplicate starts unnamed
    free_type(d);
    free_type(t);

    // A predefined type may be renamed (MPICH allows it too).
    ASSERT_EQ(MPI_Type_set_name(MPI_UINT8_T, "byte-ish"), MPI_SUCCESS);
    ASSERT_EQ(MPI_Type_get_name(MPI_UINT8_T, name, &len), MPI_SUCCESS);
    EXPECT_STREQ(name, "byte-ish");
    ASSERT_EQ(MPI_Type_set_name(MPI_UINT8_T, "MPI_UINT8_T"), MPI_SUCCESS);
}

struct Envelope {
    int ni, na, nd, combiner;
};

Envelope envelope(MPI_Datatype t)
{
    Envelope e{-1, -1, -1, -1};
    EXPECT_EQ(MPI_Type_get_envelope(t, &e.ni, &e.na, &e.nd, &e.combiner), MPI_SUCCESS);
    return e;
}

#define EXPECT_ENVELOPE(t, ni_, na_, nd_, comb_)                                                              \
    do {                                                                                                      \
        Envelope e_ = envelope(t);                                                                            \
        EXPECT_EQ(e_.ni, ni_);                                                                                \
        EXPECT_EQ(e_.na, na_);                                                                                \
        EXPECT_EQ(e_.nd, nd_);                                                                                \
        EXPECT_EQ(e_.combiner, comb_);                                                                        \
    } while (0)

TEST(MpiDatatypePack, EnvelopeAndContents)
{
    MPI_Datatype vec, hvec, idx, hidx, iblk, hblk, st, res, sub, dup, con;
    ASSERT_EQ(MPI_Type_vector(3, 2, 4, MPI_INT, &vec), MPI_SUCCESS);
    EXPECT_ENVELOPE(vec, 3, 0, 1, MPI_COMBINER_VECTOR);
    ASSERT_EQ(MPI_Type_create_hvector(2, 1, 24, MPI_INT, &hvec), MPI_SUCCESS);
    EXPECT_ENVELOPE(hvec, 2, 1, 1, MPI_COMBINER_HVECTOR);
    int bl[2] = {2, 1}, disp[2] = {3, 0};
    MPI_Aint adisp[2] = {16, -4};
    ASSERT_EQ(MPI_Type_indexed(2, bl, disp, MPI_INT, &idx), MPI_SUCCESS);
    EXPECT_ENVELOPE(idx, 5, 0, 1, MPI_COMBINER_INDEXED);
    ASSERT_EQ(MPI_Type_create_hindexed(2, bl, adisp, MPI_INT, &hidx), MPI_SUCCESS);
    EXPECT_ENVELOPE(hidx, 3, 2, 1, MPI_COMBINER_HINDEXED);
    ASSERT_EQ(MPI_Type_create_indexed_block(2, 3, disp, MPI_INT, &iblk), MPI_SUCCESS);
    EXPECT_ENVELOPE(iblk, 4, 0, 1, MPI_COMBINER_INDEXED_BLOCK);
    ASSERT_EQ(MPI_Type_create_hindexed_block(2, 3, adisp, MPI_INT, &hblk), MPI_SUCCESS);
    EXPECT_ENVELOPE(hblk, 2, 2, 1, MPI_COMBINER_HINDEXED_BLOCK);
    MPI_Datatype types[2] = {vec, MPI_DOUBLE};
    ASSERT_EQ(MPI_Type_create_struct(2, bl, adisp, types, &st), MPI_SUCCESS);
    EXPECT_ENVELOPE(st, 3, 2, 2, MPI_COMBINER_STRUCT);
    ASSERT_EQ(MPI_Type_create_resized(MPI_INT, -4, 12, &res), MPI_SUCCESS);
    EXPECT_ENVELOPE(res, 0, 2, 1, MPI_COMBINER_RESIZED);
    int sizes[2] = {4, 5}, subsizes[2] = {2, 3}, starts[2] = {1, 1};
    ASSERT_EQ(MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_FORTRAN, MPI_INT, &sub), MPI_SUCCESS);
    EXPECT_ENVELOPE(sub, 8, 0, 1, MPI_COMBINER_SUBARRAY);
    ASSERT_EQ(MPI_Type_dup(vec, &dup), MPI_SUCCESS);
    EXPECT_ENVELOPE(dup, 0, 0, 1, MPI_COMBINER_DUP);
    ASSERT_EQ(MPI_Type_contiguous(7, MPI_SHORT, &con), MPI_SUCCESS);
    EXPECT_ENVELOPE(con, 1, 0, 1, MPI_COMBINER_CONTIGUOUS);

    int ints[16];
    MPI_Aint addrs[4];
    MPI_Datatype dts[4];
    ASSERT_EQ(MPI_Type_get_contents(vec, 16, 4, 4, ints, addrs, dts), MPI_SUCCESS);
    EXPECT_EQ(std::vector<int>(ints, ints + 3), (std::vector<int>{3, 2, 4}));
    EXPECT_EQ(dts[0], MPI_INT);
    ASSERT_EQ(MPI_Type_get_contents(hidx, 16, 4, 4, ints, addrs, dts), MPI_SUCCESS);
    EXPECT_EQ(std::vector<int>(ints, ints + 3), (std::vector<int>{2, 2, 1}));
    EXPECT_EQ(std::vector<MPI_Aint>(addrs, addrs + 2), (std::vector<MPI_Aint>{16, -4}));
    ASSERT_EQ(MPI_Type_get_contents(sub, 16, 4, 4, ints, addrs, dts), MPI_SUCCESS);
    EXPECT_EQ(std::vector<int>(ints, ints + 8), (std::vector<int>{2, 4, 5, 2, 3, 1, 1, MPI_ORDER_FORTRAN}));
    ASSERT_EQ(MPI_Type_get_contents(res, 16, 4, 4, ints, addrs, dts), MPI_SUCCESS);
    EXPECT_EQ(std::vector<MPI_Aint>(addrs, addrs + 2), (std::vector<MPI_Aint>{-4, 12}));
    EXPECT_EQ(MPI_Type_get_contents(st, 16, 1, 4, ints, addrs, dts), MPI_ERR_ARG);   // addresses too short
    EXPECT_EQ(MPI_Type_get_contents(MPI_INT, 16, 4, 4, ints, addrs, dts), MPI_ERR_TYPE);

    // A derived inner type comes back as a handle of its own to free; the
    // user's original handle and the struct stay valid until freed.
    ASSERT_EQ(MPI_Type_get_contents(st, 16, 4, 4, ints, addrs, dts), MPI_SUCCESS);
    EXPECT_EQ(dts[0], vec);
    EXPECT_EQ(dts[1], MPI_DOUBLE);
    free_type(dts[0]);
    EXPECT_ENVELOPE(vec, 3, 0, 1, MPI_COMBINER_VECTOR);
    MPI_Datatype stale = vec;
    free_type(vec);
    EXPECT_ENVELOPE(st, 3, 2, 2, MPI_COMBINER_STRUCT);
    EXPECT_EQ(MPI_Type_free(&stale), MPI_ERR_TYPE);   // held only by the struct now
    for (MPI_Datatype t : {hvec, idx, hidx, iblk, hblk, st, res, sub, dup, con})
        free_type(t);
    rdmx::mpi::TypeView tv;
    EXPECT_FALSE(rdmx::mpi::type_view(stale, &tv));   // the struct held the last reference
}

TEST(MpiDatatypePack, DupKeepsLayoutAndCommitState)
{
    MPI_Datatype v, d;
    ASSERT_EQ(MPI_Type_vector(2, 1, 3, MPI_INT, &v), MPI_SUCCESS);
    ASSERT_EQ(MPI_Type_dup(v, &d), MPI_SUCCESS);
    rdmx::mpi::TypeView tv;
    ASSERT_TRUE(rdmx::mpi::type_view(d, &tv));
    EXPECT_FALSE(tv.committed);
    EXPECT_EQ(tv.extent, 16);
    free_type(d);
    v = committed(v);
    ASSERT_EQ(MPI_Type_dup(v, &d), MPI_SUCCESS);
    ASSERT_TRUE(rdmx::mpi::type_view(d, &tv));
    EXPECT_TRUE(tv.committed);
    free_type(d);
    ASSERT_EQ(MPI_Type_dup(MPI_SHORT_INT, &d), MPI_SUCCESS);
    ASSERT_TRUE(rdmx::mpi::type_view(d, &tv));
    EXPECT_EQ(tv.size, 6u);
    EXPECT_EQ(tv.extent, 8);
    int64_t items = 0;
    EXPECT_EQ(rdmx::mpi::type_basic(d, &items), MPI_SHORT_INT);
    free_type(d);
    free_type(v);
    MPI_Datatype predefined = MPI_INT;
    EXPECT_EQ(MPI_Type_free(&predefined), MPI_ERR_TYPE);
    EXPECT_NE(test_last_error().what.find("MPI_INT"), std::string::npos);
    EXPECT_EQ(MPI_Type_commit(&predefined), MPI_SUCCESS);
}

TEST(MpiDatatypePack, ExtentVariants)
{
    MPI_Datatype r;
    ASSERT_EQ(MPI_Type_create_resized(MPI_DOUBLE, -8, 24, &r), MPI_SUCCESS);
    MPI_Count lb, extent, tlb, text;
    ASSERT_EQ(MPI_Type_get_extent_x(r, &lb, &extent), MPI_SUCCESS);
    ASSERT_EQ(MPI_Type_get_true_extent_x(r, &tlb, &text), MPI_SUCCESS);
    EXPECT_EQ(lb, -8);
    EXPECT_EQ(extent, 24);
    EXPECT_EQ(tlb, 0);
    EXPECT_EQ(text, 8);
    MPI_Aint a;
    ASSERT_EQ(MPI_Type_extent(r, &a), MPI_SUCCESS);
    EXPECT_EQ(a, 24);
    ASSERT_EQ(MPI_Type_lb(r, &a), MPI_SUCCESS);
    EXPECT_EQ(a, -8);
    ASSERT_EQ(MPI_Type_ub(r, &a), MPI_SUCCESS);
    EXPECT_EQ(a, 16);
    EXPECT_EQ(MPI_Type_ub(MPI_DATATYPE_NULL, &a), MPI_ERR_TYPE);
    free_type(r);
}

TEST(MpiDatatypePack, Addresses)
{
    int arr[4] = {};
    MPI_Aint a0, a3;
    ASSERT_EQ(MPI_Get_address(&arr[0], &a0), MPI_SUCCESS);
    ASSERT_EQ(MPI_Address(&arr[3], &a3), MPI_SUCCESS);
    EXPECT_EQ(MPI_Aint_diff(a3, a0), 12);
    EXPECT_EQ(MPI_Aint_add(a0, 12), a3);

    // Absolute addresses with MPI_BOTTOM as the buffer.
    MPI_Datatype t;
    int bl[2] = {1, 1};
    MPI_Aint disp[2] = {a3, a0};
    MPI_Datatype types[2] = {MPI_INT, MPI_INT};
    ASSERT_EQ(MPI_Type_create_struct(2, bl, disp, types, &t), MPI_SUCCESS);
    arr[0] = 100;
    arr[3] = 103;
    int out[2];
    type_pack(MPI_BOTTOM, 1, t, out);
    EXPECT_EQ(out[0], 103);
    EXPECT_EQ(out[1], 100);
    free_type(t);
}

TEST(MpiDatatypePack, ManyBlocks)
{
    constexpr int kN = 1 << 20;
    MPI_Datatype v;
    ASSERT_EQ(MPI_Type_vector(kN, 1, 2, MPI_DOUBLE, &v), MPI_SUCCESS);
    std::vector<double> src(2 * kN), dst(2 * kN, kSentinel), packed(kN);
    for (size_t i = 0; i < src.size(); i++)
        src[i] = static_cast<double>(i);
    type_pack(src.data(), 1, v, packed.data());
    EXPECT_EQ(packed[kN - 1], 2.0 * (kN - 1));
    type_unpack(packed.data(), packed.size() * sizeof(double), dst.data(), 1, v);
    EXPECT_EQ(dst[2 * (kN - 1)], 2.0 * (kN - 1));
    EXPECT_EQ(dst[2 * kN - 1], kSentinel);
    free_type(v);
}

TEST(MpiDatatypePack, ThreadsCreateAndFreeConcurrently)
{
    // MPI_THREAD_MULTIPLE: the handle table takes creations, lookups and
    // frees from several threads at once.
    constexpr int kThreads = 4;
    constexpr int kRounds = 2000;
    std::vector<int> failures(kThreads, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++) {
        threads.emplace_back([t, &failures] {
            int src[8] = {0, 1, 2, 3, 4, 5, 6, 7};
            for (int r = 0; r < kRounds; r++) {
                MPI_Datatype v;
                if (MPI_Type_vector(2, 1, 2 + t % 2, MPI_INT, &v) != MPI_SUCCESS ||
                    MPI_Type_commit(&v) != MPI_SUCCESS) {
                    failures[static_cast<size_t>(t)]++;
                    continue;
                }
                int out[2];
                type_pack(src, 1, v, out);
                if (out[0] != 0 || out[1] != 2 + t % 2)
                    failures[static_cast<size_t>(t)]++;
                if (MPI_Type_free(&v) != MPI_SUCCESS)
                    failures[static_cast<size_t>(t)]++;
            }
        });
    }
    for (std::thread &th : threads)
        th.join();
    EXPECT_EQ(failures, std::vector<int>(kThreads, 0));
}

}  // namespace
