// What the collectives of the MPI layer share (coll_*.cc, nbc.cc): argument
// checks, staging of typed buffers as the bytes rdmx's collectives move
// (direct when the layout already is those bytes, else packed copies), and
// the ordered reduction of packed contributions.
//
// Every collective runs on rdmx's collectives over the communicator's
// context: byte collectives for data movement; rdmx's reductions when
// (op, type) maps onto them (op.h), else a gather of packed contributions
// to one rank that reduces them in rank order (user ops need not commute)
// and a broadcast or scatter of the result. No message of this layer uses
// a tag of its own, so none can collide with rdmx's collectives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "comm.h"
#include "datatype.h"
#include "errors.h"
#include "op.h"

extern "C" int PMPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint *true_lb, MPI_Aint *true_extent);

namespace rdmx::mpi {

// Scratch bytes, uninitialised.
class Tmp {
public:
    unsigned char *get(size_t n) {
        if (n > n_) {
            p_ = std::make_unique_for_overwrite<unsigned char[]>(n);
            n_ = n;
        }
        return p_.get();
    }
    unsigned char *data() { return p_.get(); }

private:
    std::unique_ptr<unsigned char[]> p_;
    size_t n_ = 0;
};

// A collective call in progress: the communicator and the call's name.
struct Call {
    MPI_Comm h;
    Comm *c;
    const char *name;
};

// MPI_SUCCESS with call->c set, or the error of an invalid communicator.
int coll_begin(MPI_Comm comm, const char *name, Call *call);
// Checks that raise on the call's communicator.
int check_count(const Call &k, int count, const char *what);
int check_type(const Call &k, MPI_Datatype dt, TypeView *v, const char *what);
int check_root(const Call &k, int root);
int check_counts(const Call &k, const int counts[], const char *what);   // size entries, all >= 0
// The two halves of a symmetric collective (allgather, alltoall, blocking or
// not): the receive count and type, the send ones unless sendbuf is
// MPI_IN_PLACE, and signatures of the same size (else MPI_ERR_TRUNCATE).
// *len_p: one rank's block in bytes.
int check_symmetric(const Call &k, const void *sendbuf, int scount, MPI_Datatype stype, TypeView *sv, int rcount,
                    MPI_Datatype rtype, TypeView *rv, size_t *len_p);
int rdmx_error(const Call &k, const char *what, rdmx_status_t st);
int no_mem(const Call &k);

// count elements of a type are exactly count*size bytes at buf + true_lb.
bool direct(const TypeView &v, int64_t count);
// Per-rank blocks at displacements: direct when extent == size.
bool direct_v(const TypeView &v);

inline const unsigned char *at(const void *buf, MPI_Aint off) { return static_cast<const unsigned char *>(buf) + off; }
inline unsigned char *at(void *buf, MPI_Aint off) { return static_cast<unsigned char *>(buf) + off; }

// The bytes of count elements of dt at buf: buf itself (direct) or a packed copy in tmp.
const void *send_bytes(const void *buf, int64_t count, MPI_Datatype dt, const TypeView &v, Tmp &tmp);
// Where count elements' bytes go: buf itself (direct) or tmp; recv_done unpacks tmp.
void *recv_bytes(void *buf, int64_t count, const TypeView &v, Tmp &tmp);
void recv_done(const void *bytes, void *buf, int64_t count, MPI_Datatype dt, const TypeView &v);

// Per-rank blocks of a v-collective in rdmx's terms (bytes).
struct Blocks {
    std::vector<size_t> lens, offs;
    const void *base = nullptr;   // send side
    void *rbase = nullptr;        // receive side
    bool packed = false;          // base/rbase is a packed copy
};
// Send blocks j = counts[j] elements of dt at buf + displs[j]*extent.
void send_blocks(const void *buf, const int counts[], const int displs[], MPI_Datatype dt, const TypeView &v,
                 int p, Tmp &tmp, Blocks *b);
void recv_blocks(void *buf, const int counts[], const int displs[], const TypeView &v, int p, Tmp &tmp, Blocks *b);
// Unpack received blocks (no-op when direct); `skip` (or -1) is left alone.
void recv_blocks_done(const Blocks &b, void *buf, const int counts[], const int displs[], MPI_Datatype dt,
                      const TypeView &v, int p, int skip);

// ---- reductions -------------------------------------------------------------
struct Red {
    Call k;
    MPI_Datatype dt;
    TypeView v;
    MPI_Op op;
};
// Check datatype, count and op (defined on the type) of a reduction.
int red_begin(MPI_Comm comm, const char *name, int count, MPI_Datatype dt, MPI_Op op, Red *r);

// out = x[first] op x[first+1] op ... op x[last], applied in rank order,
// where x[i] is contribution i (count elements, packed) of `all`.
void reduce_ordered(const Red &r, int64_t count, const unsigned char *all, int first, int last, unsigned char *out);

// At `root`, packed = the reduction of every rank's count elements at
// `src` (dt's layout); packed may be null elsewhere. Uses rdmx_reduce when
// the op maps onto it.
int reduce_packed(const Red &r, const void *src, int64_t count, int root, unsigned char *packed);

}  // namespace rdmx::mpi
