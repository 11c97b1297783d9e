// bench/backend.h: the communication backend the measuring loops run on.
//
// rdmx-bench and its MPI twin share every measuring loop; only this interface
// differs (backend_rdmx.cc on the rdmx public API, mpi/backend_mpi.cc on MPI).
// Every call returns a Status; the loops check each one. Sizes are bytes
// except for reductions, which count elements of a DType.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "port_facts.h"

namespace rdmxbench {

// Result of a backend call: code 0 is success, anything else an error whose
// text comes from the library (rdmx_strerror, MPI_Error_string).
struct Status {
  int code = 0;
  std::string text;
  bool ok() const { return code == 0; }
};

// Codes the benchmark itself produces (distinct from rdmx and MPI codes).
inline constexpr int kStatusTimeout = -1001;   // our own deadline expired
inline constexpr int kStatusShort = -1002;     // message of an unexpected length
inline constexpr int kStatusTooBig = -1003;    // size the backend cannot express

// A nonblocking operation in flight. `raw` holds the backend's handle.
struct Request {
  std::uintptr_t raw = 0;
  std::size_t len = 0;     // expected length (receives are checked against it)
  bool active = false;
  bool is_recv = false;
};

enum class DType { f32, f64, u64 };
enum class ROp { sum, min, max };

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;      // "rdmx" or "mpi"
  virtual std::string version() const = 0;   // library name and version

  // First initialisation (collective). init_seconds() is its duration here.
  virtual Status start(int &argc, char **&argv) = 0;
  virtual Status stop() = 0;                 // last finalisation
  virtual double init_seconds() const = 0;
  // Finalise and initialise again (rdmx); false/unsupported for MPI, whose
  // MPI_Init runs once per process.
  virtual bool can_restart() const = 0;
  virtual Status restart(double &finalize_s, double &init_s) = 0;
  // The RDMA port this rank uses and its rate (after start()); device ""
  // and a detail saying why when the backend cannot tell.
  virtual PortFacts port_facts() const {
    PortFacts p;
    p.detail = "the " + name() + " backend cannot tell which port it uses";
    return p;
  }
  // The library's effective configuration (after start()), for the report's
  // provenance; empty when the backend cannot tell.
  virtual std::vector<Setting> settings() const { return {}; }
  // True when a failed start() means "no device here" (the run is skipped).
  virtual bool unavailable(const Status &) const { return false; }
  [[noreturn]] virtual void abort(int exit_code) = 0;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual double wtime() const = 0;          // seconds, monotonic

  virtual Status send(const void *buf, std::size_t len, int dest, int tag) = 0;
  virtual Status recv(void *buf, std::size_t len, int source, int tag) = 0;
  virtual Status isend(const void *buf, std::size_t len, int dest, int tag, Request &req) = 0;
  virtual Status irecv(void *buf, std::size_t len, int source, int tag, Request &req) = 0;
  // done=true once complete (the request is then inactive); the status is
  // the operation's own.
  virtual Status test(Request &req, bool &done) = 0;
  virtual Status waitall(std::span<Request> reqs) = 0;
  // Give up on a request that did not complete in time: receives are
  // cancelled where possible; the handle is released by stop().
  virtual void abandon(Request &req) = 0;

  virtual Status barrier() = 0;
  virtual Status bcast(void *buf, std::size_t len, int root) = 0;
  virtual Status reduce(const void *sbuf, void *rbuf, std::size_t count, DType dt, ROp op, int root) = 0;
  virtual Status allreduce(const void *sbuf, void *rbuf, std::size_t count, DType dt, ROp op) = 0;
  virtual Status reduce_scatter_block(const void *sbuf, void *rbuf, std::size_t count_per_rank, DType dt,
                                      ROp op) = 0;
  virtual Status allgather(const void *sbuf, std::size_t len, void *rbuf) = 0;
  virtual Status gather(const void *sbuf, std::size_t len, void *rbuf, int root) = 0;
  virtual Status scatter(const void *sbuf, std::size_t len, void *rbuf, int root) = 0;
  virtual Status alltoall(const void *sbuf, std::size_t len, void *rbuf) = 0;
};

// Defined by the backend linked into the executable.
std::unique_ptr<Backend> make_backend();

}  // namespace rdmxbench
