// bench/mpi/backend_mpi.cc: the MPI twin's backend, so that rdmx and MPI
// are measured by exactly the same loops.
//
// Errors return (MPI_ERRORS_RETURN) so each call's status is checked and
// reported like rdmx's. MPI_Init runs once per process: `connect` measures
// MPI's lazy connection set-up with a first exchange instead of re-init.
#include "../backend.h"

#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <vector>

namespace rdmxbench {
namespace {

static_assert(sizeof(MPI_Request) <= sizeof(std::uintptr_t), "MPI_Request must fit a Request");

Status st(int rc) {
  if (rc == MPI_SUCCESS) {
    return {};
  }
  char text[MPI_MAX_ERROR_STRING] = {};
  int n = 0;
  MPI_Error_string(rc, text, &n);
  return Status{rc, std::string(text, static_cast<std::size_t>(n))};
}

Status too_big(std::size_t n) {
  return Status{kStatusTooBig, "count " + std::to_string(n) + " exceeds the MPI int range"};
}

MPI_Request mpi_req(const Request &r) {
  MPI_Request q;
  std::memcpy(&q, &r.raw, sizeof q);
  return q;
}

void set_req(Request &r, MPI_Request q, std::size_t len, bool recv) {
  r.raw = 0;
  std::memcpy(&r.raw, &q, sizeof q);
  r.len = len;
  r.active = true;
  r.is_recv = recv;
}

MPI_Datatype mpi_type(DType d) {
  switch (d) {
    case DType::f32: return MPI_FLOAT;
    case DType::f64: return MPI_DOUBLE;
    case DType::u64: return MPI_UINT64_T;
  }
  return MPI_BYTE;
}

MPI_Op mpi_op(ROp o) {
  switch (o) {
    case ROp::sum: return MPI_SUM;
    case ROp::min: return MPI_MIN;
    case ROp::max: return MPI_MAX;
  }
  return MPI_SUM;
}

// A completed receive must carry exactly the bytes the loop expects.
Status check_length(const Request &r, const MPI_Status &ms) {
  if (!r.is_recv) {
    return {};
  }
  int count = 0;
  MPI_Get_count(&ms, MPI_BYTE, &count);
  if (static_cast<std::size_t>(count) != r.len) {
    return Status{kStatusShort,
                  "received " + std::to_string(count) + " bytes, expected " + std::to_string(r.len)};
  }
  return {};
}

bool fits(std::size_t n) { return n <= static_cast<std::size_t>(INT_MAX); }

class MpiBackend final : public Backend {
 public:
  std::string name() const override { return "mpi"; }
  std::string version() const override;
  Status start(int &argc, char **&argv) override;
  Status stop() override {
    for (MPI_Request &q : abandoned_) {
      MPI_Request_free(&q);
    }
    abandoned_.clear();
    return st(MPI_Finalize());
  }
  double init_seconds() const override { return init_s_; }
  bool can_restart() const override { return false; }
  Status restart(double &, double &) override {
    return Status{kStatusTooBig, "MPI_Init can run only once per process"};
  }
  [[noreturn]] void abort(int exit_code) override {
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::_Exit(exit_code);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  double wtime() const override { return MPI_Wtime(); }

  Status send(const void *buf, std::size_t len, int dest, int tag) override {
    if (!fits(len)) {
      return too_big(len);
    }
    return st(MPI_Send(buf, static_cast<int>(len), MPI_BYTE, dest, tag, MPI_COMM_WORLD));
  }
  Status recv(void *buf, std::size_t len, int source, int tag) override;
  Status isend(const void *buf, std::size_t len, int dest, int tag, Request &req) override {
    if (!fits(len)) {
      return too_big(len);
    }
    MPI_Request q = MPI_REQUEST_NULL;
    int rc = MPI_Isend(buf, static_cast<int>(len), MPI_BYTE, dest, tag, MPI_COMM_WORLD, &q);
    if (rc == MPI_SUCCESS) {
      set_req(req, q, len, false);
    }
    return st(rc);
  }
  Status irecv(void *buf, std::size_t len, int source, int tag, Request &req) override {
    if (!fits(len)) {
      return too_big(len);
    }
    MPI_Request q = MPI_REQUEST_NULL;
    int rc = MPI_Irecv(buf, static_cast<int>(len), MPI_BYTE, source, tag, MPI_COMM_WORLD, &q);
    if (rc == MPI_SUCCESS) {
      set_req(req, q, len, true);
    }
    return st(rc);
  }
  Status test(Request &req, bool &done) override;
  Status waitall(std::span<Request> reqs) override;
  void abandon(Request &req) override {
    if (!req.active) {
      return;
    }
    MPI_Request q = mpi_req(req);
    if (req.is_recv) {
      MPI_Cancel(&q);
    }
    if (q != MPI_REQUEST_NULL) {
      abandoned_.push_back(q);
    }
    req.active = false;
  }

  Status barrier() override { return st(MPI_Barrier(MPI_COMM_WORLD)); }
  Status bcast(void *buf, std::size_t len, int root) override {
    if (!fits(len)) {
      return too_big(len);
    }
    return st(MPI_Bcast(buf, static_cast<int>(len), MPI_BYTE, root, MPI_COMM_WORLD));
  }
  Status reduce(const void *sbuf, void *rbuf, std::size_t count, DType dt, ROp op, int root) override {
    if (!fits(count)) {
      return too_big(count);
    }
    return st(MPI_Reduce(sbuf, rbuf, static_cast<int>(count), mpi_type(dt), mpi_op(op), root, MPI_COMM_WORLD));
  }
  Status allreduce(const void *sbuf, void *rbuf, std::size_t count, DType dt, ROp op) override {
    if (!fits(count)) {
      return too_big(count);
    }
    return st(MPI_Allreduce(sbuf, rbuf, static_cast<int>(count), mpi_type(dt), mpi_op(op), MPI_COMM_WORLD));
  }
  Status reduce_scatter_block(const void *sbuf, void *rbuf, std::size_t count_per_rank, DType dt,
                              ROp op) override {
    if (!fits(count_per_rank)) {
      return too_big(count_per_rank);
    }
    return st(MPI_Reduce_scatter_block(sbuf, rbuf, static_cast<int>(count_per_rank), mpi_type(dt), mpi_op(op),
                                       MPI_COMM_WORLD));
  }
  Status allgather(const void *sbuf, std::size_t len, void *rbuf) override {
    if (!fits(len)) {
      return too_big(len);
    }
    int n = static_cast<int>(len);
    return st(MPI_Allgather(sbuf, n, MPI_BYTE, rbuf, n, MPI_BYTE, MPI_COMM_WORLD));
  }
  Status gather(const void *sbuf, std::size_t len, void *rbuf, int root) override {
    if (!fits(len)) {
      return too_big(len);
    }
    int n = static_cast<int>(len);
    return st(MPI_Gather(sbuf, n, MPI_BYTE, rbuf, n, MPI_BYTE, root, MPI_COMM_WORLD));
  }
  Status scatter(const void *sbuf, std::size_t len, void *rbuf, int root) override {
    if (!fits(len)) {
      return too_big(len);
    }
    int n = static_cast<int>(len);
    return st(MPI_Scatter(sbuf, n, MPI_BYTE, rbuf, n, MPI_BYTE, root, MPI_COMM_WORLD));
  }
  Status alltoall(const void *sbuf, std::size_t len, void *rbuf) override {
    if (!fits(len)) {
      return too_big(len);
    }
    int n = static_cast<int>(len);
    return st(MPI_Alltoall(sbuf, n, MPI_BYTE, rbuf, n, MPI_BYTE, MPI_COMM_WORLD));
  }

 private:
  int rank_ = -1;
  int size_ = 0;
  double init_s_ = 0.0;
  std::vector<MPI_Request> abandoned_;
};

std::string MpiBackend::version() const {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int n = 0;
  MPI_Get_library_version(text, &n);
  std::string v(text, static_cast<std::size_t>(n));
  std::size_t cut = v.find_first_of(",\n");
  return cut == std::string::npos ? v : v.substr(0, cut);
}

Status MpiBackend::start(int &argc, char **&argv) {
  // MPI_Wtime is not usable before MPI_Init: time it with the process clock.
  using clock = std::chrono::steady_clock;
  clock::time_point t0 = clock::now();
  int rc = MPI_Init(&argc, &argv);
  init_s_ = std::chrono::duration<double>(clock::now() - t0).count();
  if (rc != MPI_SUCCESS) {
    return st(rc);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  return {};
}

Status MpiBackend::recv(void *buf, std::size_t len, int source, int tag) {
  if (!fits(len)) {
    return too_big(len);
  }
  MPI_Status ms;
  int rc = MPI_Recv(buf, static_cast<int>(len), MPI_BYTE, source, tag, MPI_COMM_WORLD, &ms);
  if (rc != MPI_SUCCESS) {
    return st(rc);
  }
  Request r;
  r.len = len;
  r.is_recv = true;
  return check_length(r, ms);
}

Status MpiBackend::test(Request &req, bool &done) {
  done = true;
  if (!req.active) {
    return {};
  }
  MPI_Request q = mpi_req(req);
  MPI_Status ms;
  int flag = 0;
  int rc = MPI_Test(&q, &flag, &ms);
  if (rc == MPI_SUCCESS && flag == 0) {
    done = false;
    return {};
  }
  req.raw = 0;
  req.active = false;
  return rc == MPI_SUCCESS ? check_length(req, ms) : st(rc);
}

Status MpiBackend::waitall(std::span<Request> reqs) {
  std::vector<MPI_Request> qs(reqs.size(), MPI_REQUEST_NULL);
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    if (reqs[i].active) {
      qs[i] = mpi_req(reqs[i]);
    }
  }
  std::vector<MPI_Status> ms(reqs.size());
  int rc = MPI_Waitall(static_cast<int>(qs.size()), qs.data(), ms.data());
  Status s;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    bool was_active = reqs[i].active;
    reqs[i].active = false;
    if (!was_active || !s.ok()) {
      continue;
    }
    if (rc == MPI_ERR_IN_STATUS && ms[i].MPI_ERROR != MPI_SUCCESS) {
      s = st(ms[i].MPI_ERROR);
    } else if (rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS) {
      s = check_length(reqs[i], ms[i]);
    }
  }
  return rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS ? st(rc) : s;
}

}  // namespace

std::unique_ptr<Backend> make_backend() { return std::make_unique<MpiBackend>(); }

}  // namespace rdmxbench
