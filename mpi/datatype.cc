// Datatypes: the predefined types, the handle table of derived types, the
// builder that flattens a constructor's type map into blocks, and the
// queries the rest of the layer uses (datatype.h).
#include <algorithm>
#include <array>
#include <cstddef>
#include <mutex>
#include <vector>

#include "datatype_impl.h"

namespace rdmx::mpi::dt {
namespace {

// Handles: predefined types are 0x4c000000 | size << 8 | index; the pair
// types and every derived type are 0x8c000000 | idx (MPICH's kind bits).
constexpr uint32_t kKindMask = 0xfc000000u;
constexpr uint32_t kBuiltinKind = 0x4c000000u;
constexpr uint32_t kDerivedKind = 0x8c000000u;
constexpr uint32_t kIdxMask = 0x03ffffffu;
constexpr uint32_t kNumPairTypes = 5;      // MPI_FLOAT_INT .. MPI_LONG_DOUBLE_INT
constexpr uint32_t kFirstDerivedIdx = 0x100;
constexpr int kSizeShift = 8;
constexpr uint32_t kByteMask = 0xff;
// The derived-type table grows by chunks that never move, so lookups need
// no lock: 4096 chunks of 1024 types.
constexpr uint32_t kChunkBits = 10;
constexpr uint32_t kChunkSize = 1u << kChunkBits;
constexpr uint32_t kMaxChunks = 4096;
uint32_t bits(MPI_Datatype dt) { return static_cast<uint32_t>(dt); }

struct Builtin {
    MPI_Datatype handle;
    const char *name;
    MPI_Aint align;     // C alignment (a struct pads to the largest)
    int elements;       // basic elements per item (2 for MPI_2INT and the like)
};

// Every named type with a builtin handle. Aliases (MPI_LONG_LONG,
// MPI_C_COMPLEX) share a handle and so report the first name, as MPICH does.
constexpr Builtin kBuiltins[] = {
    {MPI_CHAR, "MPI_CHAR", 1, 1}, {MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", 1, 1},
    {MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", 1, 1}, {MPI_BYTE, "MPI_BYTE", 1, 1},
    {MPI_WCHAR, "MPI_WCHAR", 4, 1}, {MPI_SHORT, "MPI_SHORT", 2, 1},
    {MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", 2, 1}, {MPI_INT, "MPI_INT", 4, 1},
    {MPI_UNSIGNED, "MPI_UNSIGNED", 4, 1}, {MPI_LONG, "MPI_LONG", 8, 1},
    {MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", 8, 1}, {MPI_FLOAT, "MPI_FLOAT", 4, 1},
    {MPI_DOUBLE, "MPI_DOUBLE", 8, 1}, {MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", 16, 1},
    {MPI_LONG_LONG_INT, "MPI_LONG_LONG_INT", 8, 1},
    {MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", 8, 1}, {MPI_PACKED, "MPI_PACKED", 1, 1},
    {MPI_LB, "MPI_LB", 1, 0}, {MPI_UB, "MPI_UB", 1, 0}, {MPI_2INT, "MPI_2INT", 4, 2},
    {MPI_COMPLEX, "MPI_COMPLEX", 4, 1}, {MPI_DOUBLE_COMPLEX, "MPI_DOUBLE_COMPLEX", 8, 1},
    {MPI_LOGICAL, "MPI_LOGICAL", 4, 1}, {MPI_REAL, "MPI_REAL", 4, 1},
    {MPI_DOUBLE_PRECISION, "MPI_DOUBLE_PRECISION", 8, 1}, {MPI_INTEGER, "MPI_INTEGER", 4, 1},
    {MPI_2INTEGER, "MPI_2INTEGER", 4, 2}, {MPI_2REAL, "MPI_2REAL", 4, 2},
    {MPI_2DOUBLE_PRECISION, "MPI_2DOUBLE_PRECISION", 8, 2}, {MPI_CHARACTER, "MPI_CHARACTER", 1, 1},
    {MPI_REAL4, "MPI_REAL4", 4, 1}, {MPI_REAL8, "MPI_REAL8", 8, 1}, {MPI_REAL16, "MPI_REAL16", 16, 1},
    {MPI_COMPLEX8, "MPI_COMPLEX8", 4, 1}, {MPI_COMPLEX16, "MPI_COMPLEX16", 8, 1},
    {MPI_COMPLEX32, "MPI_COMPLEX32", 16, 1}, {MPI_INTEGER1, "MPI_INTEGER1", 1, 1},
    {MPI_INTEGER2, "MPI_INTEGER2", 2, 1}, {MPI_INTEGER4, "MPI_INTEGER4", 4, 1},
    {MPI_INTEGER8, "MPI_INTEGER8", 8, 1}, {MPI_INT8_T, "MPI_INT8_T", 1, 1},
    {MPI_INT16_T, "MPI_INT16_T", 2, 1}, {MPI_INT32_T, "MPI_INT32_T", 4, 1},
    {MPI_INT64_T, "MPI_INT64_T", 8, 1}, {MPI_UINT8_T, "MPI_UINT8_T", 1, 1},
    {MPI_UINT16_T, "MPI_UINT16_T", 2, 1}, {MPI_UINT32_T, "MPI_UINT32_T", 4, 1},
    {MPI_UINT64_T, "MPI_UINT64_T", 8, 1}, {MPI_C_BOOL, "MPI_C_BOOL", 1, 1},
    {MPI_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX", 4, 1},
    {MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", 8, 1},
    {MPI_C_LONG_DOUBLE_COMPLEX, "MPI_C_LONG_DOUBLE_COMPLEX", 16, 1},
    {MPIX_C_FLOAT16, "MPIX_C_FLOAT16", 2, 1}, {MPI_AINT, "MPI_AINT", 8, 1},
    {MPI_OFFSET, "MPI_OFFSET", 8, 1}, {MPI_COUNT, "MPI_COUNT", 8, 1},
    {MPI_CXX_BOOL, "MPI_CXX_BOOL", 1, 1}, {MPI_CXX_FLOAT_COMPLEX, "MPI_CXX_FLOAT_COMPLEX", 4, 1},
    {MPI_CXX_DOUBLE_COMPLEX, "MPI_CXX_DOUBLE_COMPLEX", 8, 1},
    {MPI_CXX_LONG_DOUBLE_COMPLEX, "MPI_CXX_LONG_DOUBLE_COMPLEX", 16, 1},
};

template <typename T>
struct Pair {
    T value;
    int index;
};

struct PairInfo {
    MPI_Datatype handle;
    const char *name;
    size_t value_size;      // sizeof(T): the first basic item
    size_t index_off;       // offsetof(Pair<T>, index)
    size_t extent;          // sizeof(Pair<T>)
    MPI_Aint align;
};

template <typename T>
constexpr PairInfo pair_info(MPI_Datatype h, const char *name)
{
    return {h, name, sizeof(T), offsetof(Pair<T>, index), sizeof(Pair<T>), alignof(Pair<T>)};
}

// Indexed by the handle's low bits (0x8c000000 + i).
const PairInfo kPairs[kNumPairTypes] = {
    pair_info<float>(MPI_FLOAT_INT, "MPI_FLOAT_INT"),
    pair_info<double>(MPI_DOUBLE_INT, "MPI_DOUBLE_INT"),
    pair_info<long>(MPI_LONG_INT, "MPI_LONG_INT"),
    pair_info<short>(MPI_SHORT_INT, "MPI_SHORT_INT"),
    pair_info<long double>(MPI_LONG_DOUBLE_INT, "MPI_LONG_DOUBLE_INT"),
};

void fill_builtin(Type &t, const Builtin &b)
{
    t.predefined = true;
    t.committed = true;
    t.name = b.name;
    t.align = b.align;
    if (b.handle == MPI_LB || b.handle == MPI_UB) {
        t.sticky_lb = b.handle == MPI_LB;
        t.sticky_ub = b.handle == MPI_UB;
        return;
    }
    MPI_Aint size = static_cast<MPI_Aint>((bits(b.handle) >> kSizeShift) & kByteMask);
    t.size = static_cast<size_t>(size);
    t.ub = size;
    t.true_ub = size;
    t.has_data = true;
    t.blocks.push_back({0, size});
    t.sig.push_back({b.handle, 1});
}

void fill_pair(Type &t, const PairInfo &p)
{
    t.predefined = true;
    t.committed = true;
    t.name = p.name;
    t.align = p.align;
    auto value_size = static_cast<MPI_Aint>(p.value_size);
    auto index_off = static_cast<MPI_Aint>(p.index_off);
    auto int_size = static_cast<MPI_Aint>(sizeof(int));
    if (index_off == value_size) {
        t.blocks.push_back({0, value_size + int_size});
    } else {
        t.blocks.push_back({0, value_size});
        t.blocks.push_back({index_off, int_size});
    }
    t.size = p.value_size + sizeof(int);
    t.ub = static_cast<MPI_Aint>(p.extent);
    t.true_ub = index_off + static_cast<MPI_Aint>(sizeof(int));
    t.has_data = true;
    t.sig.push_back({p.handle, 1});
}

struct Predefined {
    std::array<Type, kByteMask + 1> builtin;   // by the handle's low byte
    // The low bytes of MPICH's builtin handles are distinct: one slot each.
    std::array<const Builtin *, kByteMask + 1> by_low{};
    std::array<Type, kNumPairTypes> pairs;

    Predefined()
    {
        for (const Builtin &b : kBuiltins) {
            uint32_t i = bits(b.handle) & kByteMask;
            fill_builtin(builtin[i], b);
            by_low[i] = &b;
        }
        for (uint32_t i = 0; i < kNumPairTypes; i++)
            fill_pair(pairs[i], kPairs[i]);
    }
    Predefined(const Predefined &) = delete;
    Predefined &operator=(const Predefined &) = delete;
};

// Never destroyed: code running at exit (an atexit MPI_Finalize, a
// destructor elsewhere) may still ask about a type.
const Predefined &predefined()
{
    static const Predefined *p = new Predefined;
    return *p;
}

const Builtin *find_builtin(MPI_Datatype dt)
{
    uint32_t h = bits(dt);
    if ((h & kKindMask) != kBuiltinKind)
        return nullptr;
    const Builtin *b = predefined().by_low[h & kByteMask];
    return b != nullptr && b->handle == dt ? b : nullptr;
}

struct Table {
    std::mutex mu;                      // creation and final release
    std::atomic<std::atomic<Type *> *> chunks[kMaxChunks] = {};
    uint32_t next = kFirstDerivedIdx;   // never used yet
    std::vector<uint32_t> free_idx;     // released, reusable
};

Table &table()
{
    static Table *t = new Table;   // never destroyed, as predefined()
    return *t;
}

std::atomic<Type *> *slot(uint32_t idx)
{
    std::atomic<Type *> *chunk = table().chunks[idx >> kChunkBits].load(std::memory_order_acquire);
    return chunk ? &chunk[idx & (kChunkSize - 1)] : nullptr;
}

}  // namespace

bool is_predefined(MPI_Datatype dt)
{
    uint32_t h = bits(dt);
    if ((h & kKindMask) == kBuiltinKind)
        return find_builtin(dt) != nullptr;
    return (h & kKindMask) == kDerivedKind && (h & kIdxMask) < kNumPairTypes;
}

const char *predefined_name(MPI_Datatype dt)
{
    uint32_t h = bits(dt);
    if ((h & kKindMask) == kDerivedKind && (h & kIdxMask) < kNumPairTypes)
        return kPairs[h & kIdxMask].name;
    const Builtin *b = (h & kKindMask) == kBuiltinKind ? find_builtin(dt) : nullptr;
    return b ? b->name : nullptr;
}

const Type *lookup(MPI_Datatype dt)
{
    uint32_t h = bits(dt);
    if ((h & kKindMask) == kBuiltinKind) {
        // The low byte indexes the table; the size bits must match too.
        if (find_builtin(dt) == nullptr)
            return nullptr;
        return &predefined().builtin[h & kByteMask];
    }
    if ((h & kKindMask) != kDerivedKind)
        return nullptr;
    uint32_t idx = h & kIdxMask;
    if (idx < kNumPairTypes)
        return &predefined().pairs[idx];
    return lookup_mutable(dt);
}

Type *lookup_mutable(MPI_Datatype dt)
{
    uint32_t h = bits(dt);
    uint32_t idx = h & kIdxMask;
    if ((h & kKindMask) != kDerivedKind || idx < kFirstDerivedIdx || (idx >> kChunkBits) >= kMaxChunks)
        return nullptr;
    std::atomic<Type *> *s = slot(idx);
    return s ? s->load(std::memory_order_acquire) : nullptr;
}

MPI_Datatype register_type(Type *t)
{
    Table &tb = table();
    std::lock_guard<std::mutex> lock(tb.mu);
    uint32_t idx;
    if (!tb.free_idx.empty()) {
        idx = tb.free_idx.back();
        tb.free_idx.pop_back();
    } else {
        if ((tb.next >> kChunkBits) >= kMaxChunks)
            return MPI_DATATYPE_NULL;
        idx = tb.next++;
        auto &chunk = tb.chunks[idx >> kChunkBits];
        if (chunk.load(std::memory_order_relaxed) == nullptr)
            chunk.store(new std::atomic<Type *>[kChunkSize](), std::memory_order_release);
    }
    slot(idx)->store(t, std::memory_order_release);
    return static_cast<MPI_Datatype>(kDerivedKind | idx);
}

void retain(MPI_Datatype dt)
{
    if (Type *t = lookup_mutable(dt))
        t->refs.fetch_add(1, std::memory_order_relaxed);
}

void release(MPI_Datatype dt)
{
    Type *t = lookup_mutable(dt);
    if (t == nullptr || t->refs.fetch_sub(1, std::memory_order_acq_rel) != 1)
        return;
    uint32_t idx = bits(dt) & kIdxMask;
    {
        Table &tb = table();
        std::lock_guard<std::mutex> lock(tb.mu);
        slot(idx)->store(nullptr, std::memory_order_release);
        tb.free_idx.push_back(idx);
    }
    for (MPI_Datatype inner : t->types)
        release(inner);
    delete t;
}

int elements_per_item(MPI_Datatype dt)
{
    uint32_t h = bits(dt);
    if ((h & kKindMask) == kDerivedKind)
        return 2;   // a pair type: value and index
    const Builtin *b = find_builtin(dt);
    return b ? b->elements : 0;
}

size_t first_element_size(MPI_Datatype dt)
{
    uint32_t h = bits(dt);
    if ((h & kKindMask) == kDerivedKind)
        return kPairs[h & kIdxMask].value_size;
    return lookup(dt)->size / 2;
}

}  // namespace rdmx::mpi::dt
