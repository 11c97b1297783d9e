#include "core/bootstrap.h"

#include <pmix.h>
#include <sys/random.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/bootstrap_pmi.h"
#include "core/log.h"

namespace rdmx {

int env_int(const char *name, int dflt) {
    const char *v = std::getenv(name);
    if (v == nullptr || *v == '\0') return dflt;
    char *end = nullptr;
    long x = std::strtol(v, &end, 10);
    return end != v && *end == '\0' && x >= 0 && x < (1L << 30) ? static_cast<int>(x) : dflt;
}

uint64_t random_u64() {
    uint64_t v = 0;
    if (getrandom(&v, sizeof(v), 0) != sizeof(v))
        v = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^ 0x9e3779b97f4a7c15ull;
    return v;
}

namespace {

class SingletonBootstrap final : public Bootstrap {
public:
    SingletonBootstrap() { local_size_ = 1; }
    const char *name() const override { return "singleton"; }
    rdmx_status_t allgather(const void *in, void *out, size_t len) override {
        std::memcpy(out, in, len);
        return RDMX_OK;
    }
};

class CallbackBootstrap final : public Bootstrap {
public:
    CallbackBootstrap(const Config &c) : fn_(c.allgather), arg_(c.allgather_arg) {
        rank_ = c.rank;
        size_ = c.size;
        local_rank_ = c.rank;
        if (const char *lr = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK")) local_rank_ = std::atoi(lr);
        // The application's own runtime was started by some launcher: Open
        // MPI's and Hydra's say how many ranks share the node.
        local_size_ = env_int("OMPI_COMM_WORLD_LOCAL_SIZE", env_int("MPI_LOCALNRANKS", 0));
    }
    const char *name() const override { return "allgather callback"; }
    rdmx_status_t allgather(const void *in, void *out, size_t len) override {
        int rc = fn_(in, out, len, arg_);
        if (rc != 0) {
            RDMX_ERROR("bootstrap: the application's allgather callback failed (returned %d, %zu bytes)", rc, len);
            return RDMX_ERR_CONNECT;
        }
        return RDMX_OK;
    }

private:
    rdmx_allgather_fn_t fn_;
    void *arg_;
};

// One PMIx session per process, finalized at exit. Finalizing PMIx at
// rdmx_finalize and initializing it again at the next rdmx_init raced with
// the server: its clean-up of the old session could drop data the new one
// had just committed, and peers' PMIx_Get then failed with NOT-FOUND
// (verbs.mesh.np8, 20 bring-ups, on a loaded host).
class PmixSession {
public:
    static PmixSession &get() {
        static PmixSession s;
        return s;
    }
    pmix_status_t status() const { return rc_; }
    const pmix_proc_t &me() const { return me_; }
    ~PmixSession() {
        if (rc_ == PMIX_SUCCESS) PMIx_Finalize(nullptr, 0);
    }
    PmixSession(const PmixSession &) = delete;
    PmixSession &operator=(const PmixSession &) = delete;

private:
    PmixSession() : rc_(PMIx_Init(&me_, nullptr, 0)) {}
    pmix_proc_t me_{};
    pmix_status_t rc_;
};

class PmixBootstrap final : public Bootstrap {
public:
    const char *name() const override { return "PMIx"; }
    // PMIX_ERR_UNREACH (no server) means we were not launched by one.
    pmix_status_t init();
    rdmx_status_t allgather(const void *in, void *out, size_t len) override;
    void abort_job(int code, const char *msg) override { (void)PMIx_Abort(code, msg, nullptr, 0); }

private:
    rdmx_status_t get_u32(pmix_rank_t r, const char *key, uint32_t *out);
    pmix_proc_t me_{};
    static std::atomic<unsigned> seq_;
};

std::atomic<unsigned> PmixBootstrap::seq_{0};

rdmx_status_t PmixBootstrap::get_u32(pmix_rank_t r, const char *key, uint32_t *out) {
    pmix_proc_t p;
    PMIX_PROC_CONSTRUCT(&p);
    PMIX_LOAD_PROCID(&p, me_.nspace, r);
    pmix_value_t *val = nullptr;
    pmix_status_t rc = PMIx_Get(&p, key, nullptr, 0, &val);
    if (rc != PMIX_SUCCESS || val == nullptr) return RDMX_ERR_CONNECT;
    switch (val->type) {
    case PMIX_UINT32: *out = val->data.uint32; break;
    case PMIX_UINT16: *out = val->data.uint16; break;
    case PMIX_INT: *out = static_cast<uint32_t>(val->data.integer); break;
    default: PMIX_VALUE_RELEASE(val); return RDMX_ERR_CONNECT;
    }
    PMIX_VALUE_RELEASE(val);
    return RDMX_OK;
}

pmix_status_t PmixBootstrap::init() {
    const PmixSession &session = PmixSession::get();
    if (session.status() != PMIX_SUCCESS) return session.status();
    me_ = session.me();
    rank_ = static_cast<int>(me_.rank);
    uint32_t v = 0;
    if (get_u32(PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, &v) != RDMX_OK || v == 0) {
        RDMX_ERROR("bootstrap: PMIx_Get(PMIX_JOB_SIZE) failed in namespace %s", me_.nspace);
        return PMIX_ERROR;
    }
    size_ = static_cast<int>(v);
    local_rank_ = rank_;
    if (get_u32(me_.rank, PMIX_LOCAL_RANK, &v) == RDMX_OK) local_rank_ = static_cast<int>(v);
    if (get_u32(PMIX_RANK_WILDCARD, PMIX_LOCAL_SIZE, &v) == RDMX_OK) local_size_ = static_cast<int>(v);
    return PMIX_SUCCESS;
}

rdmx_status_t PmixBootstrap::allgather(const void *in, void *out, size_t len) {
    char key[PMIX_MAX_KEYLEN];
    std::snprintf(key, sizeof(key), "rdmx.ag.%u", seq_.fetch_add(1));
    pmix_value_t v;
    PMIX_VALUE_CONSTRUCT(&v);
    v.type = PMIX_BYTE_OBJECT;
    v.data.bo.bytes = static_cast<char *>(const_cast<void *>(in));
    v.data.bo.size = len;
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key, &v);
    if (rc == PMIX_SUCCESS) rc = PMIx_Commit();
    pmix_info_t info;
    bool collect = true;
    PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    pmix_proc_t all;
    PMIX_LOAD_PROCID(&all, me_.nspace, PMIX_RANK_WILDCARD);
    if (rc == PMIX_SUCCESS) rc = PMIx_Fence(&all, 1, &info, 1);
    PMIX_INFO_DESTRUCT(&info);
    if (rc != PMIX_SUCCESS) {
        RDMX_ERROR("bootstrap: PMIx put/commit/fence of %s failed: %s", key, PMIx_Error_string(rc));
        return RDMX_ERR_CONNECT;
    }
    for (int r = 0; r < size_; ++r) {
        pmix_proc_t p;
        PMIX_LOAD_PROCID(&p, me_.nspace, static_cast<pmix_rank_t>(r));
        pmix_value_t *got = nullptr;
        rc = PMIx_Get(&p, key, nullptr, 0, &got);
        if (rc != PMIX_SUCCESS || got == nullptr || got->type != PMIX_BYTE_OBJECT || got->data.bo.size != len) {
            RDMX_ERROR("bootstrap: PMIx_Get(%s) from rank %d failed: %s", key, r, PMIx_Error_string(rc));
            if (got) PMIX_VALUE_RELEASE(got);
            return RDMX_ERR_CONNECT;
        }
        std::memcpy(static_cast<char *>(out) + static_cast<size_t>(r) * len, got->data.bo.bytes, len);
        PMIX_VALUE_RELEASE(got);
    }
    return RDMX_OK;
}

}  // namespace

namespace {

bool has_env(const char *name) {
    const char *v = std::getenv(name);
    return v != nullptr && *v != '\0';
}

bool pmix_offered() {
    return has_env("PMIX_NAMESPACE") || has_env("PMIX_SERVER_URI2") || has_env("PMIX_SERVER_URI3") ||
           has_env("PMIX_SERVER_URI");
}

// No bootstrap answered: if a launcher's own variables say the job has more
// than one process, starting as a job of one would silently give N separate
// jobs. Names the launcher and the fix; RDMX_OK when nothing says size > 1.
rdmx_status_t diagnose_launcher() {
    if (env_int("SLURM_NTASKS", 0) > 1 && has_env("SLURM_STEP_ID")) {
        RDMX_ERROR("bootstrap: started by Slurm's srun as one of %d tasks, but srun offers neither PMIx nor PMI-2 "
                   "(srun --mpi=none?): run with `srun --mpi=pmix` or `srun --mpi=pmi2` (srun --mpi=list shows "
                   "what this Slurm has)", env_int("SLURM_NTASKS", 0));
        return RDMX_ERR_CONNECT;
    }
    if (env_int("PMI_SIZE", 0) > 1 && has_env("PMI_PORT")) {
        RDMX_ERROR("bootstrap: MPICH's mpiexec started %d processes in its -pmi-port mode (PMI_PORT), which rdmx "
                   "does not speak: run mpiexec without -pmi-port (it then passes PMI_FD)", env_int("PMI_SIZE", 0));
        return RDMX_ERR_CONNECT;
    }
    if (env_int("PMI_SIZE", 0) > 1 || env_int("OMPI_COMM_WORLD_SIZE", 0) > 1 || env_int("MV2_COMM_WORLD_SIZE", 0) > 1) {
        RDMX_ERROR("bootstrap: the environment says this is one of several processes (PMI_SIZE, "
                   "OMPI_COMM_WORLD_SIZE or MV2_COMM_WORLD_SIZE > 1) but no PMIx server or PMI_FD socket was "
                   "given: launch with Open MPI's mpirun, srun --mpi=pmix|pmi2 or MPICH's mpiexec, or pass an "
                   "allgather callback in rdmx_config_t");
        return RDMX_ERR_CONNECT;
    }
    return RDMX_OK;
}

rdmx_status_t pmix_create(std::unique_ptr<Bootstrap> *out, bool forced) {
    auto p = std::make_unique<PmixBootstrap>();
    pmix_status_t rc = p->init();
    if (rc == PMIX_ERR_UNREACH && !forced) {  // not launched by a PMIx server after all
        if (rdmx_status_t st = diagnose_launcher(); st != RDMX_OK) return st;
        *out = std::make_unique<SingletonBootstrap>();
        return RDMX_OK;
    }
    if (rc != PMIX_SUCCESS) {
        RDMX_ERROR("bootstrap: PMIx_Init failed: %s (launched by a PMIx launcher: mpirun, srun --mpi=pmix?)",
                   PMIx_Error_string(rc));
        return RDMX_ERR_CONNECT;
    }
    *out = std::move(p);
    return RDMX_OK;
}

}  // namespace

// Order (RDMX_BOOTSTRAP=auto): the application's callback; PMIx when its
// server left its variables; PMI-2 on PMI_FD under Slurm (its PMI_FD server
// speaks only PMI-2), PMI-1 on PMI_FD otherwise (MPICH's hydra); else a job
// of one, unless a launcher's variables say otherwise.
rdmx_status_t bootstrap_create(const Config &cfg, std::unique_ptr<Bootstrap> *out) {
    using Mode = Config::BootMode;
    if (cfg.allgather != nullptr) {
        *out = std::make_unique<CallbackBootstrap>(cfg);
        return RDMX_OK;
    }
    switch (cfg.boot_mode) {
    case Mode::kPmix: return pmix_create(out, true);
    case Mode::kPmi1: return pmi_bootstrap_create(cfg, 1, out);
    case Mode::kPmi2: return pmi_bootstrap_create(cfg, 2, out);
    case Mode::kAuto: break;
    }
    // Without a launcher's environment PMIx_Init would only fail (slowly on
    // some versions).
    if (pmix_offered()) return pmix_create(out, false);
    if (has_env("PMI_FD")) return pmi_bootstrap_create(cfg, has_env("SLURM_STEP_ID") ? 2 : 1, out);
    if (rdmx_status_t st = diagnose_launcher(); st != RDMX_OK) return st;
    *out = std::make_unique<SingletonBootstrap>();
    return RDMX_OK;
}

}  // namespace rdmx
