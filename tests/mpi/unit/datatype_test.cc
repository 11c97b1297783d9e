// Datatypes of the MPI layer: predefined and pair types, the layouts,
// bounds and signatures of every constructor, names, envelope/contents,
// Get_elements and the errors. Expected extents that are not obvious from
// the standard were read from MPICH 4.0 (Debian's libmpich) running the
// same constructor calls.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "datatype.h"
#include "stubs.h"

namespace {

using rdmx::mpi::type_basic;
using rdmx::mpi::type_elements;
using rdmx::mpi::type_view;
using rdmx::mpi::TypeView;

struct Bounds {
    int size;
    MPI_Aint lb, extent, true_lb, true_extent;
};

Bounds bounds(MPI_Datatype t)
{
    Bounds b{};
    EXPECT_EQ(MPI_Type_size(t, &b.size), MPI_SUCCESS);
    EXPECT_EQ(MPI_Type_get_extent(t, &b.lb, &b.extent), MPI_SUCCESS);
    EXPECT_EQ(MPI_Type_get_true_extent(t, &b.true_lb, &b.true_extent), MPI_SUCCESS);
    return b;
}

#define EXPECT_BOUNDS(t, size_, lb_, extent_, tlb_, text_)                                                   \
    do {                                                                                                      \
        Bounds b_ = bounds(t);                                                                                \
        EXPECT_EQ(b_.size, size_);                                                                            \
        EXPECT_EQ(b_.lb, lb_);                                                                                \
        EXPECT_EQ(b_.extent, extent_);                                                                        \
        EXPECT_EQ(b_.true_lb, tlb_);                                                                          \
        EXPECT_EQ(b_.true_extent, text_);                                                                     \
    } while (0)

// The ints a type picks from an array holding 0, 1, 2, ... (its element 0
// at index `origin`, so types with a negative lower bound stay inside).
std::vector<int> picked(MPI_Datatype t, int count, int origin = 64)
{
    std::vector<int> src(1024);
    for (size_t i = 0; i < src.size(); i++)
        src[i] = static_cast<int>(i) - origin;
    TypeView v;
    EXPECT_TRUE(type_view(t, &v));
    std::vector<int> out(v.size * static_cast<size_t>(count) / sizeof(int));
    rdmx::mpi::type_pack(src.data() + origin, count, t, out.data());
    return out;
}

std::string name_of(MPI_Datatype t)
{
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    EXPECT_EQ(MPI_Type_get_name(t, name, &len), MPI_SUCCESS);
    EXPECT_EQ(len, static_cast<int>(std::strlen(name)));
    return name;
}

void free_type(MPI_Datatype t)
{
    EXPECT_EQ(MPI_Type_free(&t), MPI_SUCCESS);
    EXPECT_EQ(t, MPI_DATATYPE_NULL);
}

TEST(MpiDatatype, PredefinedSizesAndNames)
{
    struct {
        MPI_Datatype t;
        int size;
        const char *name;
    } cases[] = {
        {MPI_CHAR, 1, "MPI_CHAR"},          {MPI_INT, 4, "MPI_INT"},
        {MPI_DOUBLE, 8, "MPI_DOUBLE"},      {MPI_LONG_DOUBLE, 16, "MPI_LONG_DOUBLE"},
        {MPI_LONG_LONG, 8, "MPI_LONG_LONG_INT"},
        {MPI_C_COMPLEX, 8, "MPI_C_FLOAT_COMPLEX"},
        {MPI_C_LONG_DOUBLE_COMPLEX, 32, "MPI_C_LONG_DOUBLE_COMPLEX"},
        {MPI_PACKED, 1, "MPI_PACKED"},      {MPI_AINT, 8, "MPI_AINT"},
        {MPI_CXX_BOOL, 1, "MPI_CXX_BOOL"},  {MPI_UINT16_T, 2, "MPI_UINT16_T"},
        {MPI_2INT, 8, "MPI_2INT"},          {MPI_INTEGER8, 8, "MPI_INTEGER8"},
    };
    for (const auto &c : cases) {
        SCOPED_TRACE(c.name);
        EXPECT_BOUNDS(c.t, c.size, 0, c.size, 0, c.size);
        EXPECT_EQ(name_of(c.t), c.name);
        int ni = -1, na = -1, nd = -1, combiner = -1;
        EXPECT_EQ(MPI_Type_get_envelope(c.t, &ni, &na, &nd, &combiner), MPI_SUCCESS);
        EXPECT_EQ(combiner, MPI_COMBINER_NAMED);
        EXPECT_EQ(ni + na + nd, 0);
        TypeView v;
        ASSERT_TRUE(type_view(c.t, &v));
        EXPECT_TRUE(v.contiguous);
        EXPECT_TRUE(v.committed);
    }
}

TEST(MpiDatatype, PairTypesHaveTheCStructLayout)
{
    EXPECT_BOUNDS(MPI_FLOAT_INT, 8, 0, 8, 0, 8);
    EXPECT_BOUNDS(MPI_DOUBLE_INT, 12, 0, 16, 0, 12);
    EXPECT_BOUNDS(MPI_LONG_INT, 12, 0, 16, 0, 12);
    EXPECT_BOUNDS(MPI_SHORT_INT, 6, 0, 8, 0, 8);
    EXPECT_BOUNDS(MPI_LONG_DOUBLE_INT, 20, 0, 32, 0, 20);
    EXPECT_EQ(name_of(MPI_SHORT_INT), "MPI_SHORT_INT");
    EXPECT_EQ(name_of(MPI_LONG_DOUBLE_INT), "MPI_LONG_DOUBLE_INT");

    struct SI {
        short s;
        int i;
    } in[2] = {{7, 70}, {8, 80}};
    unsigned char packed[12];
    rdmx::mpi::type_pack(in, 2, MPI_SHORT_INT, packed);
    short s;
    int i;
    std::memcpy(&s, packed, 2);
    std::memcpy(&i, packed + 2, 4);
    EXPECT_EQ(s, 7);
    EXPECT_EQ(i, 70);
    std::memcpy(&s, packed + 6, 2);
    std::memcpy(&i, packed + 8, 4);
    EXPECT_EQ(s, 8);
    EXPECT_EQ(i, 80);

    TypeView v;
    ASSERT_TRUE(type_view(MPI_SHORT_INT, &v));
    EXPECT_FALSE(v.contiguous);
    int64_t items = 0;
    EXPECT_EQ(type_basic(MPI_SHORT_INT, &items), MPI_SHORT_INT);
    EXPECT_EQ(items, 1);
    MPI_Datatype predefined = MPI_DOUBLE_INT;
    EXPECT_EQ(MPI_Type_free(&predefined), MPI_ERR_TYPE);
}

TEST(MpiDatatype, InvalidHandles)
{
    TypeView v;
    EXPECT_FALSE(type_view(MPI_DATATYPE_NULL, &v));
    EXPECT_FALSE(type_view(MPI_COMM_WORLD, &v));
    EXPECT_FALSE(type_view(static_cast<MPI_Datatype>(0x4c0004ff), &v));   // no such builtin
    EXPECT_FALSE(type_view(static_cast<MPI_Datatype>(0x4c000805), &v));   // MPI_INT with a wrong size
    EXPECT_FALSE(type_view(static_cast<MPI_Datatype>(0x8c000010), &v));   // below the derived range
    EXPECT_FALSE(type_view(static_cast<MPI_Datatype>(0x8c0fffff), &v));   // never created
    int size;
    EXPECT_EQ(MPI_Type_size(MPI_DATATYPE_NULL, &size), MPI_ERR_TYPE);
    EXPECT_EQ(test_last_error().call, "MPI_Type_size");
    MPI_Datatype t;
    EXPECT_EQ(MPI_Type_contiguous(2, MPI_DATATYPE_NULL, &t), MPI_ERR_TYPE);
    EXPECT_EQ(MPI_Type_contiguous(-1, MPI_INT, &t), MPI_ERR_COUNT);
    EXPECT_EQ(MPI_Type_vector(2, -1, 1, MPI_INT, &t), MPI_ERR_COUNT);
    int bl[2] = {1, -2}, disp[2] = {0, 4};
    EXPECT_EQ(MPI_Type_indexed(2, bl, disp, MPI_INT, &t), MPI_ERR_COUNT);
    EXPECT_EQ(MPI_Type_contiguous(2, MPI_INT, nullptr), MPI_ERR_ARG);
    MPI_Datatype types[2] = {MPI_INT, static_cast<MPI_Datatype>(0x8c0fffff)};
    int bls[2] = {1, 1};
    MPI_Aint disps[2] = {0, 8};
    EXPECT_EQ(MPI_Type_create_struct(2, bls, disps, types, &t), MPI_ERR_TYPE);
    EXPECT_NE(test_last_error().what.find("index 1"), std::string::npos);
}

TEST(MpiDatatype, DerivedHandlesUseMpichKindBits)
{
    MPI_Datatype t;
    ASSERT_EQ(MPI_Type_contiguous(2, MPI_INT, &t), MPI_SUCCESS);
    EXPECT_EQ(static_cast<unsigned>(t) & 0xfc000000u, 0x8c000000u);
    EXPECT_GE(static_cast<unsigned>(t) & 0x03ffffffu, 0x100u);
    free_type(t);
}

TEST(MpiDatatype, ContiguousIsOneBlock)
{
    MPI_Datatype t;
    ASSERT_EQ(MPI_Type_contiguous(5, MPI_INT, &t), MPI_SUCCESS);
    EXPECT_BOUNDS(t, 20, 0, 20, 0, 20);
    TypeView v;
    ASSERT_TRUE(type_view(t, &v));
    EXPECT_TRUE(v.contiguous);
    EXPECT_FALSE(v.committed);
    ASSERT_EQ(MPI_Type_commit(&t), MPI_SUCCESS);
    ASSERT_TRUE(type_view(t, &v));
    EXPECT_TRUE(v.committed);
    EXPECT_EQ(picked(t, 2), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
    int64_t items = 0;
    EXPECT_EQ(type_basic(t, &items), MPI_INT);
    EXPECT_EQ(items, 5);
    free_type(t);

    // A billion bytes stay one block: nothing is walked per element.
    ASSERT_EQ(MPI_Type_contiguous(1 << 30, MPI_BYTE, &t), MPI_SUCCESS);
    MPI_Count size = 0;
    EXPECT_EQ(MPI_Type_size_x(t, &size), MPI_SUCCESS);
    EXPECT_EQ(size, MPI_Count{1} << 30);
    MPI_Datatype big;
    ASSERT_EQ(MPI_Type_contiguous(4, t, &big), MPI_SUCCESS);
    int isize = 0;
    EXPECT_EQ(MPI_Type_size(big, &isize), MPI_SUCCESS);
    EXPECT_EQ(isize, MPI_UNDEFINED);   // 4 GiB does not fit an int
    EXPECT_EQ(MPI_Type_size_x(big, &size), MPI_SUCCESS);
    EXPECT_EQ(size, MPI_Count{4} << 30);
    free_type(big);
    free_type(t);
}

TEST(MpiDatatype, VectorWithHoles)
{
    MPI_Datatype t;
    ASSERT_EQ(MPI_Type_vector(3, 2, 4, MPI_INT, &t), MPI_SUCCESS);
    EXPECT_BOUNDS(t, 24, 0, 40, 0, 40);
    EXPECT_EQ(picked(t, 1), (std::vector<int>{0, 1, 4, 5, 8, 9}));
    EXPECT_EQ(picked(t, 2), (std::vector<int>{0, 1, 4, 5, 8, 9, 10, 11, 14, 15, 18, 19}));
    TypeView v;
    ASSERT_TRUE(type_view(t, &v));
    EXPECT_FALSE(v.contiguous);
    int64_t items = 0;
    EXPECT_EQ(type_basic(t, &items), MPI_INT);
    EXPECT_EQ(items, 6);
    free_type(t);

    // Stride equal to the block length: the holes close up.
    ASSERT_EQ(MPI_Type_vector(3, 2, 2, MPI_INT, &t), MPI_SUCCESS);
    ASSERT_TRUE(type_view(t, &v));
    EXPECT_TRUE(v.contiguous);
    free_type(t);
    // ... at any count, without a piece per block.
    ASSERT_EQ(MPI_Type_vector(1 << 30, 1, 1, MPI_INT, &t), MPI_SUCCESS);
    ASSERT_TRUE(type_view(t, &v));
    EXPECT_TRUE(v.contiguous);
    EXPECT_EQ(v.size, size_t{4} << 30);
    free_type(t);
    // A flattened form of 2^27 blocks is refused, not attempted.
    EXPECT_EQ(MPI_Type_vector(1 << 27, 1, 2, MPI_CHAR, &t), MPI_ERR_NO_MEM);
    EXPECT_NE(test_last_error().what.find("too many"), std::string::npos);
}

TEST(MpiDatatype, NegativeStrideKeepsTypeMapOrder)
{
    MPI_Datatype t;
    ASSERT_EQ(MPI_Type_vector(3, 1, -2, MPI_INT, &t), MPI_SUCCESS);
    EXPECT_BOUNDS(t, 12, -16, 20, -16, 20);
    EXPECT_EQ(picked(t, 1), (std::vector<int>{0, -2, -4}));
    free_type(t);
}

TEST(MpiDatatype, HvectorOfPairTypeSpansWholeExtents)
{
    // MPICH: a copy spans the old type's whole extent (padding included).
    MPI_Datatype t;
    ASSERT_EQ(MPI_Type_create_hvector(2, 1, 20, MPI_DOUBLE_INT, &t), MPI_SUCCESS);
    EXPECT_BOUNDS(t, 24, 0, 36, 0, 32);
    free_type(t);
    ASSERT_EQ(MPI_Type_hvector(3, 1, 8, MPI_INT, &t), MPI_SUCCESS);
    EXPECT_EQ(picked(t, 1), (std::vector<int>{0, 2, 4}));
    free_type(t);
}

TEST(MpiDatatype, IndexedFamilies)
{
    MPI_Datatype t;
    int bl[2] = {2, 1}, disp[2] = {3, 0};
    ASSERT_EQ(MPI_Type_indexed(2, bl, disp, MPI_INT, &t), MPI_SUCCESS);
    EXPECT_BOUNDS(t, 12, 0, 20, 0, 20);
    EXPECT_EQ(picked(t, 1), (std::vector<int>{3, 4, 0}));
    EXPECT_EQ(picked(t, 2), (std::vector<int>{3, 4, 0, 8, 9, 5}));
    free_type(t);

    MPI_Aint hdisp[2] = {12, 0};
    ASSERT_EQ(MPI_Type_create_hindexed(2, bl, hdisp, MPI_INT, &t), MPI_SUCCESS);
    EXPECT_EQ(picked(t, 1), (std::vector<int>{3, 4, 0}));
    free_type(t);
    ASSERT_EQ(MPI_Type_hindexed(2, bl, hdisp, MPI_INT, &t), MPI_SUCCESS);
    EXPECT_EQ(picked(t, 1), (std::vector<int>{3, 4, 0}));
    free_type(t);

    int bdisp[3] = {6, 0, 3};
    ASSERT_EQ(MPI_Type_create_indexed_block(3, 2, bdisp, MPI_INT, &t), MPI_SUCCESS);
    EXPECT_BOUNDS(t, 24, 0, 32, 0, 32);
    EXPECT_EQ(picked(t, 1), (std::vector<int>{6, 7, 0, 1, 3, 4}));
    free_type(t);

    MPI_Aint hbdisp[2] = {-8, 8};
    ASSERT_EQ(MPI_Type_create_hindexed_block(2, 1, hbdisp, MPI_INT, &t), MPI_SUCCESS);
    EXPECT_BOUNDS(t, 8, -8, 20, -8, 20);
    EXPECT_EQ(picked(t, 1), (std::vector<int>{-2, 2}));
    free_type(t);

    // Zero-length blocks and a zero count contribute nothing.
    int zbl[3] = {0, 1, 0}, zdisp[3] = {100, 2, -100};
    ASSERT_EQ(MPI_Type_indexed(3, zbl, zdisp, MPI_INT, &t), MPI_SUCCESS);
    EXPECT_BOUNDS(t, 4, 8, 4, 8, 4);
    free_type(t);
    ASSERT_EQ(MPI_Type_indexed(0, zbl, zdisp, MPI_INT, &t), MPI_SUCCESS);
    EXPECT_BOUNDS(t, 0, 0, 0, 0, 0);
    free_type(t);
}

TEST(MpiDatatype, StructPadsLikeC)
{
    MPI_Datatype t;
    int bl[2] = {1, 1};
    MPI_Aint disp[2] = {0, 8};
    MPI_Datatype types[2] = {MPI_DOUBLE, MPI_CHAR};
    ASSERT_EQ(MPI_Type_create_struct(2, bl, disp, types, &t), MPI_SUCCESS);
    EXPECT_BOUNDS(t, 9, 0, 16, 0, 9);
    struct S {
        double d;
        char c;
    };
    static_assert(sizeof(S) == 16);
    S in[2] = {{1.5, 'a'}, {2.5, 'b'}};
    unsigned char packed[18];
    rdmx::mpi::type_pack(in, 2, t, packed);
    double d;
    std::memcpy(&d, packed, 8);
    EXPECT_EQ(d, 1.5);
    EXPECT_EQ(packed[8], 'a');
    std::memcpy(&d, packed + 9, 8);
    EXPECT_EQ(d, 2.5);
    EXPECT_EQ(packed[17], 'b');
    int64_t items = 0;
    EXPECT_EQ(type_basic(t, &items), MPI_DATATYPE_NULL);   // mixed types
    free_type(t);

    // long double aligns to 16 (MPICH: extent 32, true extent 20).
    MPI_Aint disp2[2] = {0, 4};
    MPI_Datatype types2[2] = {MPI_CHAR, MPI_LONG_DOUBLE};
    ASSERT_EQ(MPI_Type_create_struct(2, bl, disp2, types2, &t), MPI_SUCCESS);
    EXPECT_BOUNDS(t, 17, 0, 32, 0, 20);
    free_type(t);

    // The deprecated MPI_Type_struct builds the same.
    ASSERT_EQ(MPI_Type_struct(2, bl, disp, types, &t), MPI_SUCCESS);
    EXPECT_BOUNDS(t, 9, 0, 16, 0, 9);
    free_type(t);
}

TEST(MpiDatatype, LbUbMarkersAreSticky)
{
    EXPECT_BOUNDS(MPI_LB, 0, 0, 0, 0, 0);
    EXPECT_BOUNDS(MPI_UB, 0, 0, 0, 0, 0);
    MPI_Datatype t;
    int bl[3] = {1, 1, 1};
    MPI_Aint disp[3] = {-8, 0, 32};
    MPI_Datatype types[3] = {MPI_LB, MPI_INT, MPI_UB};
    ASSERT_EQ(MPI_Type_create_struct(3, bl, disp, types, &t), MPI_SUCCESS);
    EXPECT_BOUNDS(t, 4, -8, 40, 0, 4);
    // A struct holding it keeps the markers: its bounds win over the data.
    MPI_Datatype outer;
    int obl[2] = {1, 1};
    MPI_Aint odisp[2] = {0, 100};
    MPI_Datatype otypes[2] = {t, MPI_DOUBLE};
    ASSERT_EQ(MPI_Type_create_struct(2, obl, odisp, otypes, &outer), MPI_SUCCESS);
    EXPECT_BOUNDS(outer, 12, -8, 40, 0, 108);
    free_type(outer);
    // Two of them in a contiguous: the markers replicate at the extent.
    ASSERT_EQ(MPI_Type_contiguous(2, t, &outer), MPI_SUCCESS);
    EXPECT_BOUNDS(outer, 8, -8, 80, 0, 44);
    EXPECT_EQ(picked(outer, 1), (std::vector<int>{0, 10}));
    free_type(outer);
    free_type(t);
}

TEST(MpiDatatype, Resized)
{
    MPI_Datatype r, c;
    ASSERT_EQ(MPI_Type_create_resized(MPI_INT, -4, 16, &r), MPI_SUCCESS);
    EXPECT_BOUNDS(r, 4, -4, 16, 0, 4);
    ASSERT_EQ(MPI_Type_contiguous(3, r, &c), MPI_SUCCESS);
    EXPECT_BOUNDS(c, 12, -4, 48, 0, 36);
    EXPECT_EQ(picked(c, 1), (std::vector<int>{0, 4, 8}));
    EXPECT_EQ(picked(r, 3), (std::vector<int>{0, 4, 8}));
    free_type(c);

    // Not sticky (MPI-3): a struct around it takes the usual bounds (MPICH: 12).
    MPI_Datatype r8, s;
    ASSERT_EQ(MPI_Type_create_resized(MPI_INT, 0, 8, &r8), MPI_SUCCESS);
    int bl[2] = {1, 1};
    MPI_Aint disp[2] = {0, 8};
    MPI_Datatype types[2] = {r8, MPI_INT};
    ASSERT_EQ(MPI_Type_create_struct(2, bl, disp, types, &s), MPI_SUCCESS);
    EXPECT_BOUNDS(s, 8, 0, 12, 0, 12);
    free_type(s);
    free_type(r8);

    // Resizing a vector to interleave: element i starts one int further.
    MPI_Datatype v, vr;
    ASSERT_EQ(MPI_Type_vector(2, 1, 3, MPI_INT, &v), MPI_SUCCESS);
    ASSERT_EQ(MPI_Type_create_resized(v, 0, 4, &vr), MPI_SUCCESS);
    EXPECT_EQ(picked(vr, 3), (std::vector<int>{0, 3, 1, 4, 2, 5}));
    TypeView tv;
    ASSERT_TRUE(type_view(vr, &tv));
    EXPECT_FALSE(tv.contiguous);
    EXPECT_EQ(tv.extent, 4);
    free_type(vr);
    free_type(v);
    free_type(r);
}

TEST(MpiDatatype, SubarrayCAndFortranOrder)
{
    int sizes[2] = {4, 5}, subsizes[2] = {2, 3}, starts[2] = {1, 1};
    MPI_Datatype t;
    ASSERT_EQ(MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_INT, &t), MPI_SUCCESS);
    EXPECT_BOUNDS(t, 24, 0, 80, 24, 32);   // MPICH's numbers
    EXPECT_EQ(picked(t, 1), (std::vector<int>{6, 7, 8, 11, 12, 13}));
    EXPECT_EQ(picked(t, 2), (std::vector<int>{6, 7, 8, 11, 12, 13, 26, 27, 28, 31, 32, 33}));
    free_type(t);

    // Fortran: the first dimension varies fastest; (i, j) is at i + 4*j.
    ASSERT_EQ(MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_FORTRAN, MPI_INT, &t),
              MPI_SUCCESS);
    EXPECT_BOUNDS(t, 24, 0, 80, 20, 40);
    EXPECT_EQ(picked(t, 1), (std::vector<int>{5, 6, 9, 10, 13, 14}));
    free_type(t);

    int sizes3[3] = {2, 3, 4}, sub3[3] = {2, 2, 2}, st3[3] = {0, 1, 2};
    ASSERT_EQ(MPI_Type_create_subarray(3, sizes3, sub3, st3, MPI_ORDER_C, MPI_INT, &t), MPI_SUCCESS);
    EXPECT_EQ(picked(t, 1), (std::vector<int>{6, 7, 10, 11, 18, 19, 22, 23}));
    free_type(t);

    int zero[2] = {0, 3};
    ASSERT_EQ(MPI_Type_create_subarray(2, sizes, zero, starts, MPI_ORDER_C, MPI_INT, &t), MPI_SUCCESS);
    EXPECT_BOUNDS(t, 0, 0, 80, 0, 0);
    free_type(t);

    EXPECT_EQ(MPI_Type_create_subarray(2, sizes, subsizes, starts, 3, MPI_INT, &t), MPI_ERR_ARG);
    int bad_starts[2] = {3, 0};
    EXPECT_EQ(MPI_Type_create_subarray(2, sizes, subsizes, bad_starts, MPI_ORDER_C, MPI_INT, &t), MPI_ERR_ARG);
    EXPECT_EQ(MPI_Type_create_subarray(0, sizes, subsizes, starts, MPI_ORDER_C, MPI_INT, &t), MPI_ERR_ARG);
}

TEST(MpiDatatype, NestedTypes)
{
    // struct { int a; double b; } as a type, then every other one of them.
    struct S {
        int a;
        double b;
    };
    MPI_Datatype st, v, c;
    int bl[2] = {1, 1};
    MPI_Aint disp[2] = {offsetof(S, a), offsetof(S, b)};
    MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE};
    ASSERT_EQ(MPI_Type_create_struct(2, bl, disp, types, &st), MPI_SUCCESS);
    EXPECT_BOUNDS(st, 12, 0, 16, 0, 16);
    ASSERT_EQ(MPI_Type_vector(2, 1, 2, st, &v), MPI_SUCCESS);
    EXPECT_BOUNDS(v, 24, 0, 48, 0, 48);
    ASSERT_EQ(MPI_Type_contiguous(2, v, &c), MPI_SUCCESS);
    EXPECT_BOUNDS(c, 48, 0, 96, 0, 96);
    ASSERT_EQ(MPI_Type_commit(&c), MPI_SUCCESS);
    S in[6];
    for (int i = 0; i < 6; i++)
        in[i] = {i, i + 0.5};
    std::vector<unsigned char> packed(48);
    rdmx::mpi::type_pack(in, 1, c, packed.data());
    const int expect[4] = {0, 2, 3, 5};   // elements 0 and 2, then 3 and 5
    for (int k = 0; k < 4; k++) {
        int a;
        double b;
        std::memcpy(&a, &packed[static_cast<size_t>(k) * 12], 4);
        std::memcpy(&b, &packed[static_cast<size_t>(k) * 12 + 4], 8);
        EXPECT_EQ(a, expect[k]);
        EXPECT_EQ(b, expect[k] + 0.5);
    }
    // Inner types freed by the user live on inside the outer one.
    free_type(st);
    free_type(v);
    std::vector<unsigned char> again(48);
    rdmx::mpi::type_pack(in, 1, c, again.data());
    EXPECT_EQ(packed, again);
    free_type(c);
}

}  // namespace
