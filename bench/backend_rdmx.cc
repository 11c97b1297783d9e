// bench/backend_rdmx.cc: the benchmark backend on the rdmx public C API.
//
// rdmx_init(NULL, ...) bootstraps through PMIx (or a singleton) and connects
// the full mesh, so timing it is the bring-up time. rdmx allows init and
// finalize several times in one process, which `connect` uses. Every wait
// that depends on a peer has rdmx's own deadline, so no call here can hang.
#include "backend.h"

#include <rdmx/rdmx.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <vector>

namespace rdmxbench {
namespace {

Status st(rdmx_status_t s) {
  if (s == RDMX_OK) {
    return {};
  }
  return Status{static_cast<int>(s), rdmx_strerror(s)};
}

rdmx_request_h handle(const Request &r) { return reinterpret_cast<rdmx_request_h>(r.raw); }

void set_handle(Request &r, rdmx_request_h h, std::size_t len, bool recv) {
  r.raw = reinterpret_cast<std::uintptr_t>(h);
  r.len = len;
  r.active = true;   // a NULL handle counts as completed when tested
  r.is_recv = recv;
}

rdmx_datatype_t dtype(DType d) {
  switch (d) {
    case DType::f32: return RDMX_FLOAT;
    case DType::f64: return RDMX_DOUBLE;
    case DType::u64: return RDMX_UINT64;
  }
  return RDMX_UINT8;
}

rdmx_op_t rop(ROp o) {
  switch (o) {
    case ROp::sum: return RDMX_SUM;
    case ROp::min: return RDMX_MIN;
    case ROp::max: return RDMX_MAX;
  }
  return RDMX_SUM;
}

double steady_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

// A completed receive must carry exactly the bytes the loop expects.
Status check_length(const Request &r, const rdmx_msg_info_t &info, Status s) {
  if (s.ok() && r.is_recv && info.length != r.len) {
    return Status{kStatusShort, "received " + std::to_string(info.length) + " bytes, expected " +
                                    std::to_string(r.len)};
  }
  return s;
}

class RdmxBackend final : public Backend {
 public:
  ~RdmxBackend() override {
    if (ctx_ != nullptr) {
      rdmx_finalize(ctx_);
    }
  }
  std::string name() const override { return "rdmx"; }
  std::string version() const override {
    return "rdmx " + std::to_string(RDMX_VERSION_MAJOR) + "." + std::to_string(RDMX_VERSION_MINOR) + "." +
           std::to_string(RDMX_VERSION_PATCH);
  }
  Status start(int &, char **&) override { return open(); }
  Status stop() override {
    if (ctx_ == nullptr) {
      return {};
    }
    rdmx_status_t s = rdmx_finalize(ctx_);
    ctx_ = nullptr;
    release_abandoned();
    return st(s);
  }
  double init_seconds() const override { return init_s_; }
  bool can_restart() const override { return true; }
  Status restart(double &finalize_s, double &init_s) override {
    double t0 = steady_seconds();
    Status s = stop();
    finalize_s = steady_seconds() - t0;
    if (!s.ok()) {
      return s;
    }
    s = open();
    init_s = init_s_;
    return s;
  }
  PortFacts port_facts() const override {
    PortFacts p;
    rdmx_port_info_t info;
    rdmx_port_info_init(&info);
    if (ctx_ == nullptr || rdmx_get_port_info(ctx_, &info) != RDMX_OK) {
      p.detail = "rdmx_get_port_info failed (see the log)";
      return p;
    }
    p.device = info.device;
    p.port = info.port;
    p.kind = info.kind;
    p.source = info.source;
    p.speed = info.speed;
    p.signal_gbps = info.signal_gbps;
    p.data_gbps = info.data_gbps;
    p.netdev_mbps = info.netdev_mbps;
    p.sm_peers = info.sm_peers;
    p.detail = info.detail;
    p.fw_ver = info.fw_ver;
    p.state = info.state;
    p.active_mtu = info.active_mtu;
    p.link_layer = info.link_layer;
    return p;
  }
  std::vector<Setting> settings() const override {
    std::vector<Setting> out;
    if (ctx_ == nullptr) {
      return out;
    }
    std::string text(rdmx_config_text(ctx_, nullptr, 0), '\0');
    text.resize(rdmx_config_text(ctx_, text.data(), text.size() + 1));
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {   // NAME \t VALUE \t SOURCE
      const std::size_t a = line.find('\t'), b = line.find('\t', a == std::string::npos ? a : a + 1);
      if (a != std::string::npos && b != std::string::npos) {
        out.push_back({line.substr(0, a), line.substr(a + 1, b - a - 1), line.substr(b + 1)});
      }
    }
    return out;
  }
  bool unavailable(const Status &s) const override { return s.code == RDMX_ERR_NO_DEVICE; }
  [[noreturn]] void abort(int exit_code) override {
    std::fflush(stdout);
    std::fflush(stderr);
    if (ctx_ != nullptr) {
      rdmx_finalize(ctx_);   // peers then see PEER_LOST at once, not at their deadline
      ctx_ = nullptr;
    }
    std::_Exit(exit_code);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  double wtime() const override { return rdmx_wtime(); }

  Status send(const void *buf, std::size_t len, int dest, int tag) override {
    return st(rdmx_send(ctx_, buf, len, dest, tag));
  }
  Status recv(void *buf, std::size_t len, int source, int tag) override {
    rdmx_msg_info_t info{};
    Request r;
    r.len = len;
    r.is_recv = true;
    return check_length(r, info, st(rdmx_recv(ctx_, buf, len, source, tag, &info)));
  }
  Status isend(const void *buf, std::size_t len, int dest, int tag, Request &req) override {
    rdmx_request_h h = nullptr;
    rdmx_status_t s = rdmx_isend(ctx_, buf, len, dest, tag, &h);
    if (s == RDMX_OK) {
      set_handle(req, h, len, false);
    }
    return st(s);
  }
  Status irecv(void *buf, std::size_t len, int source, int tag, Request &req) override {
    rdmx_request_h h = nullptr;
    rdmx_status_t s = rdmx_irecv(ctx_, buf, len, source, tag, &h);
    if (s == RDMX_OK) {
      set_handle(req, h, len, true);
    }
    return st(s);
  }
  Status test(Request &req, bool &done) override;
  Status waitall(std::span<Request> reqs) override;
  void abandon(Request &req) override {
    if (!req.active) {
      return;
    }
    rdmx_request_h h = handle(req);
    if (h != nullptr) {
      if (req.is_recv) {
        rdmx_cancel(h);
      }
      abandoned_.push_back(h);
    }
    req.active = false;
  }

  Status barrier() override { return st(rdmx_barrier(ctx_)); }
  Status bcast(void *buf, std::size_t len, int root) override { return st(rdmx_bcast(ctx_, buf, len, root)); }
  Status reduce(const void *sbuf, void *rbuf, std::size_t count, DType dt, ROp op, int root) override {
    return st(rdmx_reduce(ctx_, sbuf, rbuf, count, dtype(dt), rop(op), root));
  }
  Status allreduce(const void *sbuf, void *rbuf, std::size_t count, DType dt, ROp op) override {
    return st(rdmx_allreduce(ctx_, sbuf, rbuf, count, dtype(dt), rop(op)));
  }
  Status reduce_scatter_block(const void *sbuf, void *rbuf, std::size_t count_per_rank, DType dt,
                              ROp op) override {
    return st(rdmx_reduce_scatter_block(ctx_, sbuf, rbuf, count_per_rank, dtype(dt), rop(op)));
  }
  Status allgather(const void *sbuf, std::size_t len, void *rbuf) override {
    return st(rdmx_allgather(ctx_, sbuf, len, rbuf));
  }
  Status gather(const void *sbuf, std::size_t len, void *rbuf, int root) override {
    return st(rdmx_gather(ctx_, sbuf, len, rbuf, root));
  }
  Status scatter(const void *sbuf, std::size_t len, void *rbuf, int root) override {
    return st(rdmx_scatter(ctx_, sbuf, len, rbuf, root));
  }
  Status alltoall(const void *sbuf, std::size_t len, void *rbuf) override {
    return st(rdmx_alltoall(ctx_, sbuf, len, rbuf));
  }

 private:
  Status open() {
    double t0 = steady_seconds();
    rdmx_status_t s = rdmx_init(nullptr, &ctx_);
    init_s_ = steady_seconds() - t0;
    if (s != RDMX_OK) {
      ctx_ = nullptr;
      return st(s);
    }
    rank_ = rdmx_rank(ctx_);
    size_ = rdmx_size(ctx_);
    return {};
  }
  // Requests given up on complete (cancelled) once the context is gone.
  void release_abandoned() {
    for (rdmx_request_h &h : abandoned_) {
      int done = 0;
      rdmx_test(&h, &done, nullptr);
    }
    abandoned_.clear();
  }

  rdmx_context_h ctx_ = nullptr;
  int rank_ = -1;
  int size_ = 0;
  double init_s_ = 0.0;
  std::vector<rdmx_request_h> abandoned_;
};

Status RdmxBackend::test(Request &req, bool &done) {
  done = true;
  if (!req.active) {
    return {};
  }
  rdmx_request_h h = handle(req);
  int flag = 0;
  rdmx_msg_info_t info{};
  rdmx_status_t s = rdmx_test(&h, &flag, &info);
  if (s == RDMX_INPROGRESS && flag == 0) {
    done = false;
    return {};
  }
  req.raw = 0;
  req.active = false;
  return check_length(req, info, st(s));
}

Status RdmxBackend::waitall(std::span<Request> reqs) {
  std::vector<rdmx_request_h> hs;
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    if (reqs[i].active) {
      hs.push_back(handle(reqs[i]));
      idx.push_back(i);
    }
  }
  if (hs.empty()) {
    return {};
  }
  std::vector<rdmx_msg_info_t> infos(hs.size());
  Status s = st(rdmx_waitall(hs.size(), hs.data(), infos.data()));
  for (std::size_t k = 0; k < idx.size(); ++k) {
    Request &r = reqs[idx[k]];
    r.active = false;
    r.raw = 0;
    if (s.ok()) {
      s = check_length(r, infos[k], s);
    }
  }
  return s;
}

}  // namespace

std::unique_ptr<Backend> make_backend() { return std::make_unique<RdmxBackend>(); }

}  // namespace rdmxbench
