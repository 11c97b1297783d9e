// The builder of derived datatypes (a constructor's pieces -> blocks,
// signature and bounds) and the queries of datatype.h.
//
// Bounds follow MPICH, so a program sees the extents it sees there: a piece
// of n copies of `old` at displacement d spans [d + old.lb, d + old.ub +
// (n-1)*extent) (the old type's whole extent, not just its data), MPI_LB and
// MPI_UB markers are sticky (they win over every other bound), only a
// struct pads its extent to the alignment of its largest member, and
// zero-length blocks count where MPICH counts them (vector and
// block-indexed constructors, not indexed or struct).
#include <algorithm>
#include <limits>
#include <stdexcept>

#include "datatype_impl.h"

namespace rdmx::mpi::dt {
namespace {

struct Bounds {
    bool any = false, sticky_lb = false, sticky_ub = false;
    MPI_Aint lb = 0, ub = 0, slb = 0, sub = 0, tlb = 0, tub = 0;

    // One piece of old type o: its bounds [lo, hi) and true bounds [tlo, thi).
    void add(const Type &o, MPI_Aint lo, MPI_Aint hi, MPI_Aint tlo, MPI_Aint thi)
    {
        if (o.sticky_lb) {
            slb = sticky_lb ? std::min(slb, lo) : lo;
            sticky_lb = true;
        }
        if (o.sticky_ub) {
            sub = sticky_ub ? std::max(sub, hi) : hi;
            sticky_ub = true;
        }
        if (o.predefined && (o.sticky_lb || o.sticky_ub))
            return;   // MPI_LB, MPI_UB: markers, nothing else
        lb = any ? std::min(lb, lo) : lo;
        ub = any ? std::max(ub, hi) : hi;
        // Like MPICH, a type without data still has true bounds (where it
        // sits) and they count.
        tlb = any ? std::min(tlb, tlo) : tlo;
        tub = any ? std::max(tub, thi) : thi;
        any = true;
    }

    void add(const Piece &p)
    {
        const Type &o = *p.old;
        MPI_Aint ext = o.extent();
        if (p.count == 0) {
            // A zero-length block of a vector or block-indexed type: MPICH
            // still bounds the type by the point where it would start.
            MPI_Aint at = p.disp + (ext >= 0 ? o.lb : o.ub);
            add(o, at, at, at + (o.true_lb - o.lb), at - (o.ub - o.true_ub));
            return;
        }
        MPI_Aint span = static_cast<MPI_Aint>(p.count - 1) * ext;
        MPI_Aint lo = std::min<MPI_Aint>(0, span), hi = std::max<MPI_Aint>(0, span);
        add(o, p.disp + o.lb + lo, p.disp + o.ub + hi, p.disp + o.true_lb + lo, p.disp + o.true_ub + hi);
    }
};

void add_block(std::vector<Block> &blocks, MPI_Aint off, MPI_Aint len)
{
    if (len == 0)
        return;
    if (!blocks.empty() && blocks.back().off + blocks.back().len == off) {
        blocks.back().len += len;
        return;
    }
    if (blocks.size() >= kMaxBlocks)
        throw std::length_error("datatype has too many non-contiguous blocks");
    blocks.push_back({off, len});
}

void add_sig(std::vector<SigRun> &sig, MPI_Datatype type, int64_t count)
{
    if (count == 0)
        return;
    if (!sig.empty() && sig.back().type == type) {
        sig.back().count += count;
        return;
    }
    if (sig.size() >= kMaxBlocks)
        throw std::length_error("datatype has too many basic-type changes");
    sig.push_back({type, count});
}

// Append the blocks and signature of one piece to t.
void flatten(Type *t, const Piece &p)
{
    const Type &o = *p.old;
    if (o.size == 0 || p.count == 0)
        return;
    MPI_Aint ext = o.extent();
    // Copies that abut (one block filling the extent) make one block.
    if (o.blocks.size() == 1 && o.blocks[0].len == ext) {
        add_block(t->blocks, p.disp + o.blocks[0].off, ext * static_cast<MPI_Aint>(p.count));
    } else {
        if (o.blocks.size() * static_cast<size_t>(p.count) > kMaxBlocks)
            throw std::length_error("datatype has too many non-contiguous blocks");
        for (int64_t k = 0; k < p.count; k++) {
            MPI_Aint base = p.disp + static_cast<MPI_Aint>(k) * ext;
            for (const Block &b : o.blocks)
                add_block(t->blocks, base + b.off, b.len);
        }
    }
    if (o.sig.size() == 1) {
        add_sig(t->sig, o.sig[0].type, o.sig[0].count * p.count);
    } else {
        for (int64_t k = 0; k < p.count; k++)
            for (const SigRun &r : o.sig)
                add_sig(t->sig, r.type, r.count);
    }
}

}  // namespace

void build(Type *t, const std::vector<Piece> &pieces, bool pad_struct)
{
    Bounds b;
    t->size = 0;
    t->align = 1;
    for (const Piece &p : pieces) {
        if (p.count == 0 && !p.keep_empty)
            continue;
        b.add(p);
        t->size += p.old->size * static_cast<size_t>(p.count);
        t->align = std::max(t->align, p.old->align);
        flatten(t, p);
    }
    t->sticky_lb = b.sticky_lb;
    t->sticky_ub = b.sticky_ub;
    t->lb = b.sticky_lb ? b.slb : (b.any ? b.lb : 0);
    t->ub = b.sticky_ub ? b.sub : (b.any ? b.ub : t->lb);
    if (pad_struct && !b.sticky_lb && !b.sticky_ub && t->align > 1) {
        MPI_Aint rem = t->extent() % t->align;
        if (rem > 0)
            t->ub += t->align - rem;
    }
    t->has_data = b.any;
    t->true_lb = b.any ? b.tlb : 0;
    t->true_ub = b.any ? b.tub : 0;
}

}  // namespace rdmx::mpi::dt

namespace rdmx::mpi {

bool type_view(MPI_Datatype dt, TypeView *out)
{
    const dt::Type *t = dt::lookup(dt);
    if (t == nullptr)
        return false;
    out->size = t->size;
    out->lb = t->lb;
    out->extent = t->extent();
    out->true_lb = t->true_lb;
    out->contiguous = t->contiguous();
    out->committed = t->committed;
    return true;
}

MPI_Datatype type_basic(MPI_Datatype dt, int64_t *items_per_element)
{
    *items_per_element = 0;
    const dt::Type *t = dt::lookup(dt);
    if (t == nullptr || t->sig.empty())
        return MPI_DATATYPE_NULL;
    int64_t items = 0;
    for (const dt::SigRun &r : t->sig) {
        if (r.type != t->sig[0].type)
            return MPI_DATATYPE_NULL;
        items += r.count;
    }
    *items_per_element = items;
    return t->sig[0].type;
}

namespace {

// Elements in the leading `bytes` of one element of t; MPI_UNDEFINED when
// the bytes end inside a basic element.
int64_t partial_elements(const dt::Type &t, size_t bytes)
{
    int64_t elements = 0;
    for (const dt::SigRun &r : t.sig) {
        if (bytes == 0)
            break;
        const dt::Type *item = dt::lookup(r.type);
        size_t whole = std::min<size_t>(bytes / item->size, static_cast<size_t>(r.count));
        int per_item = dt::elements_per_item(r.type);
        elements += static_cast<int64_t>(whole) * per_item;
        bytes -= whole * item->size;
        if (whole == static_cast<size_t>(r.count))
            continue;
        // The bytes end inside this run: at most the first half of a
        // two-element item may be there.
        if (per_item == 2 && bytes >= dt::first_element_size(r.type)) {
            bytes -= dt::first_element_size(r.type);
            elements++;
        }
        return bytes == 0 ? elements : MPI_UNDEFINED;
    }
    return bytes == 0 ? elements : MPI_UNDEFINED;
}

}  // namespace

int64_t type_elements(MPI_Datatype dt, size_t bytes)
{
    const dt::Type *t = dt::lookup(dt);
    if (t == nullptr)
        return MPI_UNDEFINED;
    if (t->size == 0)
        return 0;
    int64_t per_element = 0;
    for (const dt::SigRun &r : t->sig)
        per_element += r.count * dt::elements_per_item(r.type);
    int64_t rest = partial_elements(*t, bytes % t->size);
    if (rest == MPI_UNDEFINED)
        return MPI_UNDEFINED;
    return static_cast<int64_t>(bytes / t->size) * per_element + rest;
}

}  // namespace rdmx::mpi
