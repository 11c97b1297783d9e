// MPI groups: ordered sets of world ranks, local objects (no communication).
// Group_size, rank, incl, excl, range_incl, range_excl, translate_ranks,
// compare, union, intersection, difference, free; MPI_GROUP_EMPTY.
#include "group.h"

#include <algorithm>
#include <mutex>
#include <new>
#include <unordered_map>
#include <unordered_set>

#include "comm.h"
#include "errors.h"

namespace rdmx::mpi {
namespace {

constexpr unsigned kGroupKind = 0x88000000u;   // MPICH's kind bits of a run-time group
constexpr unsigned kIndexMask = 0x03ffffffu;

struct GroupTable {
    std::mutex mu;
    std::vector<std::vector<int>> members;
    std::vector<bool> live;
};
GroupTable &table() {
    static GroupTable t;
    return t;
}

bool group_index(MPI_Group g, size_t *idx) {
    const auto u = static_cast<unsigned>(g);
    if ((u & ~kIndexMask) != kGroupKind) return false;
    *idx = u & kIndexMask;
    return true;
}

int bad_group(const char *call, MPI_Group g) {
    return err_raise(MPI_COMM_NULL, MPI_ERR_GROUP, call, "invalid group 0x%x (null, freed, or not a group)",
                     static_cast<unsigned>(g));
}

// Rank -> index in the group, for the set operations.
std::unordered_map<int, int> index_of(const std::vector<int> &m) {
    std::unordered_map<int, int> ix;
    for (size_t i = 0; i < m.size(); ++i) ix.emplace(m[i], static_cast<int>(i));
    return ix;
}

// The ranks a list of (first, last, stride) triplets names, in order;
// MPI_SUCCESS or the error class of the first bad triplet.
int expand_ranges(int size, int n, const int ranges[][3], std::vector<int> *out, const char *call) {
    for (int i = 0; i < n; ++i) {
        const int first = ranges[i][0], last = ranges[i][1], stride = ranges[i][2];
        if (stride == 0) return err_raise(MPI_COMM_NULL, MPI_ERR_ARG, call, "range %d has stride 0", i);
        if (first < 0 || first >= size || last < 0 || last >= size)
            return err_raise(MPI_COMM_NULL, MPI_ERR_RANK, call, "range %d (%d, %d, %d) leaves a group of size %d", i,
                             first, last, stride, size);
        if ((stride > 0 && first > last) || (stride < 0 && first < last)) continue;   // empty range
        for (int r = first; stride > 0 ? r <= last : r >= last; r += stride) out->push_back(r);
    }
    return MPI_SUCCESS;
}

// Ranks of a group of `size` that incl/excl name: in range, no repeats.
int check_ranks(int size, int n, const int ranks[], const char *call) {
    std::vector<bool> seen(static_cast<size_t>(size));
    for (int i = 0; i < n; ++i) {
        if (ranks[i] < 0 || ranks[i] >= size)
            return err_raise(MPI_COMM_NULL, MPI_ERR_RANK, call, "rank %d (entry %d) is not in a group of size %d",
                             ranks[i], i, size);
        if (seen[static_cast<size_t>(ranks[i])])
            return err_raise(MPI_COMM_NULL, MPI_ERR_RANK, call, "rank %d appears twice", ranks[i]);
        seen[static_cast<size_t>(ranks[i])] = true;
    }
    return MPI_SUCCESS;
}

int make_out(std::vector<int> m, MPI_Group *out, const char *call) {
    try {
        *out = group_make(std::move(m));
        return MPI_SUCCESS;
    } catch (...) {
        return err_raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, call, "out of memory");
    }
}

int incl(const std::vector<int> &m, int n, const int ranks[], MPI_Group *out, const char *call) {
    const int rc = check_ranks(static_cast<int>(m.size()), n, ranks, call);
    if (rc != MPI_SUCCESS) return rc;
    std::vector<int> r;
    r.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) r.push_back(m[static_cast<size_t>(ranks[i])]);
    return make_out(std::move(r), out, call);
}

int excl(const std::vector<int> &m, int n, const int ranks[], MPI_Group *out, const char *call) {
    const int rc = check_ranks(static_cast<int>(m.size()), n, ranks, call);
    if (rc != MPI_SUCCESS) return rc;
    std::vector<bool> drop(m.size());
    for (int i = 0; i < n; ++i) drop[static_cast<size_t>(ranks[i])] = true;
    std::vector<int> r;
    for (size_t i = 0; i < m.size(); ++i)
        if (!drop[i]) r.push_back(m[i]);
    return make_out(std::move(r), out, call);
}

}  // namespace

bool group_members(MPI_Group g, std::vector<int> *out) {
    if (g == MPI_GROUP_EMPTY) {
        out->clear();
        return true;
    }
    size_t i;
    if (!group_index(g, &i)) return false;
    GroupTable &t = table();
    std::lock_guard lk(t.mu);
    if (i >= t.members.size() || !t.live[i]) return false;
    *out = t.members[i];
    return true;
}

MPI_Group group_make(std::vector<int> world_ranks) {
    if (world_ranks.empty()) return MPI_GROUP_EMPTY;
    GroupTable &t = table();
    std::lock_guard lk(t.mu);
    size_t i = 0;
    while (i < t.live.size() && t.live[i]) ++i;   // reuse freed slots
    if (i > kIndexMask) throw std::bad_alloc();
    if (i == t.live.size()) {
        t.members.emplace_back();
        t.live.push_back(false);
    }
    t.members[i] = std::move(world_ranks);
    t.live[i] = true;
    return static_cast<MPI_Group>(kGroupKind | static_cast<unsigned>(i));
}

int world_rank_self() {
    const Comm *w = comm_get(MPI_COMM_WORLD);
    return w ? w->rank : -1;
}

}  // namespace rdmx::mpi

using namespace rdmx::mpi;

RDMXMPI_WEAK(Group_size)
RDMXMPI_API int PMPI_Group_size(MPI_Group group, int *size) {
    std::vector<int> m;
    if (!group_members(group, &m)) return bad_group("MPI_Group_size", group);
    *size = static_cast<int>(m.size());
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Group_rank)
RDMXMPI_API int PMPI_Group_rank(MPI_Group group, int *rank) {
    std::vector<int> m;
    if (!group_members(group, &m)) return bad_group("MPI_Group_rank", group);
    const auto it = std::find(m.begin(), m.end(), world_rank_self());
    *rank = it == m.end() ? MPI_UNDEFINED : static_cast<int>(it - m.begin());
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Group_incl)
RDMXMPI_API int PMPI_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup) {
    std::vector<int> m;
    if (!group_members(group, &m)) return bad_group("MPI_Group_incl", group);
    if (n < 0) return err_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Group_incl", "negative count %d", n);
    return incl(m, n, ranks, newgroup, "MPI_Group_incl");
}

RDMXMPI_WEAK(Group_excl)
RDMXMPI_API int PMPI_Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup) {
    std::vector<int> m;
    if (!group_members(group, &m)) return bad_group("MPI_Group_excl", group);
    if (n < 0) return err_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Group_excl", "negative count %d", n);
    return excl(m, n, ranks, newgroup, "MPI_Group_excl");
}

RDMXMPI_WEAK(Group_range_incl)
RDMXMPI_API int PMPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup) {
    static constexpr const char *kCall = "MPI_Group_range_incl";
    std::vector<int> m, r;
    if (!group_members(group, &m)) return bad_group(kCall, group);
    if (n < 0) return err_raise(MPI_COMM_NULL, MPI_ERR_ARG, kCall, "negative count %d", n);
    const int rc = expand_ranges(static_cast<int>(m.size()), n, ranges, &r, kCall);
    return rc != MPI_SUCCESS ? rc : incl(m, static_cast<int>(r.size()), r.data(), newgroup, kCall);
}

RDMXMPI_WEAK(Group_range_excl)
RDMXMPI_API int PMPI_Group_range_excl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup) {
    static constexpr const char *kCall = "MPI_Group_range_excl";
    std::vector<int> m, r;
    if (!group_members(group, &m)) return bad_group(kCall, group);
    if (n < 0) return err_raise(MPI_COMM_NULL, MPI_ERR_ARG, kCall, "negative count %d", n);
    const int rc = expand_ranges(static_cast<int>(m.size()), n, ranges, &r, kCall);
    return rc != MPI_SUCCESS ? rc : excl(m, static_cast<int>(r.size()), r.data(), newgroup, kCall);
}

RDMXMPI_WEAK(Group_translate_ranks)
RDMXMPI_API int PMPI_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[], MPI_Group group2,
                                           int ranks2[]) {
    static constexpr const char *kCall = "MPI_Group_translate_ranks";
    std::vector<int> a, b;
    if (!group_members(group1, &a)) return bad_group(kCall, group1);
    if (!group_members(group2, &b)) return bad_group(kCall, group2);
    if (n < 0) return err_raise(MPI_COMM_NULL, MPI_ERR_ARG, kCall, "negative count %d", n);
    const auto ix = index_of(b);
    for (int i = 0; i < n; ++i) {
        const int r = ranks1[i];
        if (r == MPI_PROC_NULL) {
            ranks2[i] = MPI_PROC_NULL;
            continue;
        }
        if (r < 0 || r >= static_cast<int>(a.size()))
            return err_raise(MPI_COMM_NULL, MPI_ERR_RANK, kCall, "rank %d (entry %d) is not in group1 of size %zu", r,
                             i, a.size());
        const auto it = ix.find(a[static_cast<size_t>(r)]);
        ranks2[i] = it == ix.end() ? MPI_UNDEFINED : it->second;
    }
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Group_compare)
RDMXMPI_API int PMPI_Group_compare(MPI_Group group1, MPI_Group group2, int *result) {
    std::vector<int> a, b;
    if (!group_members(group1, &a)) return bad_group("MPI_Group_compare", group1);
    if (!group_members(group2, &b)) return bad_group("MPI_Group_compare", group2);
    if (a == b) {
        *result = MPI_IDENT;
        return MPI_SUCCESS;
    }
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    *result = a == b ? MPI_SIMILAR : MPI_UNEQUAL;
    return MPI_SUCCESS;
}

namespace {

enum class SetOp { Union, Intersection, Difference };

int set_op(MPI_Group g1, MPI_Group g2, MPI_Group *out, SetOp op, const char *call) {
    std::vector<int> a, b;
    if (!group_members(g1, &a)) return bad_group(call, g1);
    if (!group_members(g2, &b)) return bad_group(call, g2);
    try {
        const std::unordered_set<int> in_b(b.begin(), b.end());
        std::vector<int> r;
        for (int x : a)   // group1's members keep group1's order in all three
            if ((op != SetOp::Intersection && op != SetOp::Difference) || (in_b.count(x) != 0) == (op == SetOp::Intersection))
                r.push_back(x);
        if (op == SetOp::Union) {
            const std::unordered_set<int> in_a(a.begin(), a.end());
            for (int x : b)
                if (!in_a.count(x)) r.push_back(x);
        }
        return make_out(std::move(r), out, call);
    } catch (...) {
        return err_raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, call, "out of memory");
    }
}

}  // namespace

RDMXMPI_WEAK(Group_union)
RDMXMPI_API int PMPI_Group_union(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup) {
    return set_op(group1, group2, newgroup, SetOp::Union, "MPI_Group_union");
}

RDMXMPI_WEAK(Group_intersection)
RDMXMPI_API int PMPI_Group_intersection(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup) {
    return set_op(group1, group2, newgroup, SetOp::Intersection, "MPI_Group_intersection");
}

RDMXMPI_WEAK(Group_difference)
RDMXMPI_API int PMPI_Group_difference(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup) {
    return set_op(group1, group2, newgroup, SetOp::Difference, "MPI_Group_difference");
}

RDMXMPI_WEAK(Group_free)
RDMXMPI_API int PMPI_Group_free(MPI_Group *group) {
    if (group == nullptr) return bad_group("MPI_Group_free", MPI_GROUP_NULL);
    if (*group == MPI_GROUP_EMPTY) {   // predefined: freeing it only clears the caller's handle
        *group = MPI_GROUP_NULL;
        return MPI_SUCCESS;
    }
    size_t i;
    if (!group_index(*group, &i)) return bad_group("MPI_Group_free", *group);
    GroupTable &t = table();
    std::lock_guard lk(t.mu);
    if (i >= t.live.size() || !t.live[i]) return bad_group("MPI_Group_free", *group);
    t.live[i] = false;
    t.members[i] = {};
    *group = MPI_GROUP_NULL;
    return MPI_SUCCESS;
}
