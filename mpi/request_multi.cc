// Completion of several requests: MPI_Waitall, MPI_Testall, MPI_Waitany,
// MPI_Testany, MPI_Waitsome, MPI_Testsome. Blocking forms hand the rdmx
// requests to one rdmx_waitall/rdmx_waitany, so every progress pass serves
// the whole array. MPI_ERROR is written only when a call returns
// MPI_ERR_IN_STATUS (then in every status it reports), as MPI says.
#include <vector>

#include "errors.h"
#include "request.h"

using namespace rdmx::mpi;

namespace {

constexpr int kStackRequests = 32;   // arrays up to this size need no allocation

// An array entry: nullptr for MPI_REQUEST_NULL and inactive persistent
// requests (both complete at once with an empty status).
Request *live_at(MPI_Request h) {
    if (h == MPI_REQUEST_NULL) return nullptr;
    Request *r = req_get(h);
    return r == nullptr || (r->persistent && !r->active) ? nullptr : r;
}

// Every handle must be null or a request: checked before anything completes.
int check_array(const char *call, int count, const MPI_Request reqs[]) {
    if (count < 0) return err_raise(MPI_COMM_NULL, MPI_ERR_COUNT, call, "count %d is negative", count);
    if (count > 0 && reqs == nullptr) return err_raise(MPI_COMM_NULL, MPI_ERR_ARG, call, "the request array is NULL");
    for (int i = 0; i < count; ++i)
        if (reqs[i] != MPI_REQUEST_NULL && req_get(reqs[i]) == nullptr) return req_bad(call, reqs[i]);
    return MPI_SUCCESS;
}

// Scratch arrays for the rdmx handles of a wait: on the stack when small.
struct Scratch {
    rdmx_request_h hs_small[kStackRequests];
    rdmx_msg_info_t infos_small[kStackRequests];
    int idx_small[kStackRequests];
    std::vector<rdmx_request_h> hs_big;
    std::vector<rdmx_msg_info_t> infos_big;
    std::vector<int> idx_big;
    rdmx_request_h *hs = hs_small;
    rdmx_msg_info_t *infos = infos_small;
    int *idx = idx_small;

    explicit Scratch(int count) {
        if (count <= kStackRequests) return;
        hs_big.resize(static_cast<size_t>(count));
        infos_big.resize(static_cast<size_t>(count));
        idx_big.resize(static_cast<size_t>(count));
        hs = hs_big.data();
        infos = infos_big.data();
        idx = idx_big.data();
    }
};

// The rdmx requests still running in reqs, into s (n of them).
size_t gather(int count, const MPI_Request reqs[], Scratch &s) {
    size_t n = 0;
    for (int i = 0; i < count; ++i) {
        Request *r = live_at(reqs[i]);
        if (r == nullptr || r->done || r->rr == nullptr) continue;
        s.hs[n] = r->rr;
        s.infos[n] = rdmx_msg_info_t{RDMX_ANY_SOURCE, RDMX_ANY_TAG, 0, RDMX_ERR_INVALID_ARG};
        s.idx[n] = i;
        ++n;
    }
    return n;
}

// Reports the requests reqs[idx[k]], k < n (all harvested, or null /
// inactive); status k goes to statuses[by_pos ? k : idx[k]].
int report_list(const char *call, MPI_Request reqs[], const int *idx, int n, MPI_Status statuses[], bool by_pos) {
    bool any_err = false;
    for (int k = 0; k < n; ++k) {
        const Request *r = live_at(reqs[idx[k]]);
        any_err = any_err || (r != nullptr && r->err != MPI_SUCCESS);
    }
    bool failed = false;
    Outcome fo{};
    int failed_at = -1, failed_err = MPI_SUCCESS;
    for (int k = 0; k < n; ++k) {
        const int i = idx[k];
        MPI_Status *s = statuses == MPI_STATUSES_IGNORE ? nullptr : &statuses[by_pos ? k : i];
        Request *r = live_at(reqs[i]);
        if (r == nullptr) {
            if (s != nullptr) status_empty(s);
            continue;
        }
        if (s != nullptr) {
            const int keep = s->MPI_ERROR;
            *s = r->st;
            if (!any_err) s->MPI_ERROR = keep;
        }
        const Outcome o = outcome_of(r);
        const int e = req_finish(r, &reqs[i]);
        if (s != nullptr && any_err) s->MPI_ERROR = e;
        if (e != MPI_SUCCESS && !failed) {
            failed = true;
            fo = o;
            failed_at = i;
            failed_err = e;
        }
    }
    if (!failed) return MPI_SUCCESS;
    return err_raise(fo.comm, MPI_ERR_IN_STATUS, call, "request %d failed with error class %d%s%s", failed_at,
                     failed_err, fo.rst != RDMX_OK ? ": " : "", fo.rst != RDMX_OK ? rdmx_strerror(fo.rst) : "");
}

int report_all(const char *call, int count, MPI_Request reqs[], MPI_Status statuses[]) {
    Scratch s(count);
    for (int i = 0; i < count; ++i) s.idx[i] = i;
    return report_list(call, reqs, s.idx, count, statuses, false);
}

// Polls every live request once; the indices of those done go to out.
int poll_all(int count, const MPI_Request reqs[], int *out, bool *any_live) {
    int n = 0;
    *any_live = false;
    for (int i = 0; i < count; ++i) {
        Request *r = live_at(reqs[i]);
        if (r == nullptr) continue;
        *any_live = true;
        if (req_poll(r, false)) out[n++] = i;
    }
    return n;
}

// Blocks until one live request of reqs has completed (harvested); false
// when none is live.
bool wait_one(int count, const MPI_Request reqs[]) {
    bool any_live = false;
    for (int i = 0; i < count; ++i) {
        Request *r = live_at(reqs[i]);
        if (r == nullptr) continue;
        any_live = true;
        if (r->done || r->rr == nullptr) {
            (void)req_poll(r, false);
            return true;
        }
    }
    if (!any_live) return false;
    Scratch s(count);
    const size_t n = gather(count, reqs, s);
    size_t k = n;
    rdmx_msg_info_t info{RDMX_ANY_SOURCE, RDMX_ANY_TAG, 0, RDMX_OK};
    const rdmx_status_t st = rdmx_waitany(n, s.hs, &k, &info);
    if (k < n) {
        Request *r = req_get(reqs[s.idx[k]]);
        r->rr = nullptr;
        req_harvest(r, st, info);
    }
    return true;
}

}  // namespace

RDMXMPI_WEAK(Waitall)
RDMXMPI_API int PMPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[])
{
    if (int e = check_array("MPI_Waitall", count, array_of_requests)) return e;
    Scratch s(count);
    const size_t n = gather(count, array_of_requests, s);
    if (n > 0) {
        (void)rdmx_waitall(n, s.hs, s.infos);
        for (size_t k = 0; k < n; ++k) {
            Request *r = req_get(array_of_requests[s.idx[k]]);
            r->rr = nullptr;  // rdmx freed it
            req_harvest(r, s.infos[k].error, s.infos[k]);
        }
    }
    for (int i = 0; i < count; ++i)  // done at post, or a hook's request that had none
        if (Request *r = live_at(array_of_requests[i])) (void)req_poll(r, true);
    return report_all("MPI_Waitall", count, array_of_requests, array_of_statuses);
}

RDMXMPI_WEAK(Testall)
RDMXMPI_API int PMPI_Testall(int count, MPI_Request array_of_requests[], int *flag, MPI_Status array_of_statuses[])
{
    if (int e = check_array("MPI_Testall", count, array_of_requests)) return e;
    // Completions found are kept in their requests (harvested) and
    // reported only once all are done, as MPI_Testall must.
    bool all = true;
    for (int i = 0; i < count; ++i)
        if (Request *r = live_at(array_of_requests[i])) all = req_poll(r, false) && all;
    *flag = all ? 1 : 0;
    if (!all) return MPI_SUCCESS;
    return report_all("MPI_Testall", count, array_of_requests, array_of_statuses);
}

static int report_one(const char *call, MPI_Request reqs[], int i, int *indx, MPI_Status *status) {
    Request *r = req_get(reqs[i]);
    *indx = i;
    req_copy_status(r, status);
    const Outcome o = outcome_of(r);
    const int err = req_finish(r, &reqs[i]);
    return err == MPI_SUCCESS ? MPI_SUCCESS : req_raise(o, err, call);
}

RDMXMPI_WEAK(Waitany)
RDMXMPI_API int PMPI_Waitany(int count, MPI_Request array_of_requests[], int *indx, MPI_Status *status)
{
    if (int e = check_array("MPI_Waitany", count, array_of_requests)) return e;
    for (;;) {
        for (int i = 0; i < count; ++i) {
            Request *r = live_at(array_of_requests[i]);
            if (r != nullptr && r->done) return report_one("MPI_Waitany", array_of_requests, i, indx, status);
        }
        if (!wait_one(count, array_of_requests)) break;
    }
    *indx = MPI_UNDEFINED;
    if (status != MPI_STATUS_IGNORE) status_empty(status);
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Testany)
RDMXMPI_API int PMPI_Testany(int count, MPI_Request array_of_requests[], int *indx, int *flag, MPI_Status *status)
{
    if (int e = check_array("MPI_Testany", count, array_of_requests)) return e;
    bool any_live = false;
    for (int i = 0; i < count; ++i) {
        Request *r = live_at(array_of_requests[i]);
        if (r == nullptr) continue;
        any_live = true;
        if (req_poll(r, false)) {
            *flag = 1;
            return report_one("MPI_Testany", array_of_requests, i, indx, status);
        }
    }
    *indx = MPI_UNDEFINED;
    *flag = any_live ? 0 : 1;
    if (!any_live && status != MPI_STATUS_IGNORE) status_empty(status);
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Waitsome)
RDMXMPI_API int PMPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[],
                              MPI_Status array_of_statuses[])
{
    if (int e = check_array("MPI_Waitsome", incount, array_of_requests)) return e;
    bool any_live = false;
    int n = poll_all(incount, array_of_requests, array_of_indices, &any_live);
    if (!any_live) {
        *outcount = MPI_UNDEFINED;
        return MPI_SUCCESS;
    }
    if (n == 0) {
        (void)wait_one(incount, array_of_requests);
        n = poll_all(incount, array_of_requests, array_of_indices, &any_live);
    }
    *outcount = n;
    return report_list("MPI_Waitsome", array_of_requests, array_of_indices, n, array_of_statuses, true);
}

RDMXMPI_WEAK(Testsome)
RDMXMPI_API int PMPI_Testsome(int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[],
                              MPI_Status array_of_statuses[])
{
    if (int e = check_array("MPI_Testsome", incount, array_of_requests)) return e;
    bool any_live = false;
    const int n = poll_all(incount, array_of_requests, array_of_indices, &any_live);
    *outcount = any_live ? n : MPI_UNDEFINED;
    if (n == 0) return MPI_SUCCESS;
    return report_list("MPI_Testsome", array_of_requests, array_of_indices, n, array_of_statuses, true);
}
