// bench/allpairs_pair.cc: one all-pairs measurement in this rank's roles.
//
// A rank has up to two roles at once: the sending role towards dst (pings,
// windows of data) and the answering role for src (pongs, acks). Each role
// is a small state machine with its own iteration counter, and one loop
// polls both. So a slow partner on one side never holds back this rank's
// answers to the other side, nor the timestamps of its own round trips:
// otherwise, in the shift pattern, one slow node would make its neighbours'
// links look slow too. A role that makes no progress for --pair-timeout
// seconds, or gets an error, ends the measurement and the failure is
// recorded against that link; the run goes on.
#include "allpairs.h"

#include "commands.h"
#include "pattern.h"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <thread>

namespace rdmxbench {

namespace {

// Receive buffers --verify may use for one window (the rest come in waves).
constexpr std::size_t kVerifyBufferBytes = 64u << 20;
constexpr double kInjectedDelay = 0.05;   // seconds, --inject-slow

// Posting and polling with error capture: after the first failure `err` is
// set (with the peer it concerns) and every role stops.
// What the roles share: the run context and payload helpers.
struct Engine {
  Ctx &ctx;
  Backend &be;
  const AllpairsConfig &cfg;

  // Gives up on requests; their buffers are kept for the life of the process
  // since a receive that could not be cancelled may still land there.
  void abandon(std::span<Request> rs, Bytes &b1, Bytes &b2) {
    for (Request &r : rs) {
      be.abandon(r);
    }
    static std::vector<Bytes> graveyard;
    graveyard.push_back(std::move(b1));
    graveyard.push_back(std::move(b2));
  }
  // Checks a received payload; a mismatch is reported and returns false.
  bool check(void *buf, std::size_t n, int from, std::uint64_t iter, const char *what, long msg = -1) {
    ctx.after_recv(buf, n);
    Where w{what, from, ctx.rank, iter, n, msg};
    return !ctx.opt.verify || ctx.verify(buf, n, pattern_seed(from, ctx.rank, iter, n), w);
  }
  // --inject-slow (a test hook): when this rank's sends to `to` may go out.
  // The role waits without blocking the other one, like a slow link would.
  // --inject-silent: never (the pair must then time out).
  double release_at(int to) const {
    const Options &o = ctx.opt;
    if (o.inject_slow_from == ctx.rank && (o.inject_slow_to < 0 || o.inject_slow_to == to)) {
      return o.inject_silent ? HUGE_VAL : be.wtime() + kInjectedDelay;
    }
    return 0.0;
  }
  void fill(void *buf, std::size_t n, int to, std::uint64_t iter) {
    if (ctx.opt.verify) {
      pattern_fill(buf, n, pattern_seed(ctx.rank, to, iter, n));
    }
  }
};

// Common to the four roles: the peer, the iteration counter, the state and
// the role's own error (one failed link must not stop the other role).
struct RoleBase {
  Engine &e;
  int peer;
  int tag;
  long total;
  long warm;
  bool outgoing;             // the role's link: true me -> peer, false peer -> me
  long i = 0;
  int state = 0;
  bool corrupted = false;
  double hold_until = 0.0;   // --inject-slow
  Status err;                // first failure; the role then stops
  bool done() const { return peer < 0 || i >= total; }
  bool finished() const { return done() || !err.ok(); }
  bool held() const { return hold_until > 0 && e.be.wtime() < hold_until; }
  bool post(const Status &s) {
    if (!s.ok() && err.ok()) {
      err = s;
    }
    return err.ok();
  }
  bool poll(Request &r) {
    bool complete = true;
    if (r.active && err.ok()) {
      post(e.be.test(r, complete));
    }
    return complete && err.ok();
  }
  bool poll_all(std::span<Request> rs) {
    bool all = true;
    for (Request &r : rs) {
      all = poll(r) && all;
    }
    return all;
  }
  std::uint64_t iter() const { return static_cast<std::uint64_t>(i); }
};

// Ping dst, wait for the pong; records each timed round trip.
struct LatSender : RoleBase {
  Bytes out, in;
  Request rq, sq;
  double t0 = 0.0, t1 = -1.0;
  std::vector<double> rtts;
  bool step() {
    std::size_t n = e.cfg.lat_size;
    if (finished()) {
      return false;
    }
    if (state == 0) {
      e.fill(out.data(), n, peer, iter());
      post(e.be.irecv(in.data(), n, peer, tag + 1, rq));
      t0 = e.be.wtime();
      hold_until = e.release_at(peer);
      state = 3;
      return true;
    }
    if (state == 3) {
      if (held()) {
        return false;
      }
      post(e.be.isend(out.data(), n, peer, tag, sq));
      state = 1;
      return true;
    }
    if (t1 < 0 && poll(rq)) {
      t1 = e.be.wtime();
    }
    if (t1 < 0 || !poll(sq)) {
      return false;
    }
    if (i >= warm) {
      rtts.push_back(t1 - t0);
    }
    corrupted = !e.check(in.data(), n, peer, iter(), "allpairs latency") || corrupted;
    ++i;
    state = 0;
    t1 = -1.0;
    return true;
  }
  void abandon() {
    Request rs[2] = {rq, sq};
    e.abandon(rs, out, in);
  }
};

// Answer src's pings at once (the pong is prepared in advance).
struct LatResponder : RoleBase {
  Bytes out, in;
  Request rq, sq;
  bool step() {
    std::size_t n = e.cfg.lat_size;
    if (finished()) {
      return false;
    }
    if (state == 0) {
      post(e.be.irecv(in.data(), n, peer, tag, rq));
      state = 1;
      return true;
    }
    if (state == 1) {
      if (!poll(rq)) {
        return false;
      }
      hold_until = e.release_at(peer);
      state = 3;
    }
    if (state == 3) {
      if (held()) {
        return false;
      }
      post(e.be.isend(out.data(), n, peer, tag + 1, sq));
      corrupted = !e.check(in.data(), n, peer, iter(), "allpairs latency") || corrupted;
      state = 2;
      return true;
    }
    if (!poll(sq)) {
      return false;
    }
    ++i;
    e.fill(out.data(), n, peer, iter());
    state = 0;
    return true;
  }
  void abandon() {
    Request rs[2] = {rq, sq};
    e.abandon(rs, out, in);
  }
};

// Send a window of nonblocking messages to dst, wait for its ack.
struct BwSender : RoleBase {
  Bytes buf;
  std::vector<Request> sends;
  Request ack;
  Bytes ack_in = Bytes(4);
  double t0 = 0.0, t1 = -1.0, timed = 0.0;
  bool step() {
    if (finished()) {
      return false;
    }
    if (state == 0) {
      e.fill(buf.data(), e.cfg.bw_size, peer, iter());
      post(e.be.irecv(ack_in.data(), 4, peer, tag + 1, ack));
      t0 = e.be.wtime();
      hold_until = e.release_at(peer);
      state = 3;
      return true;
    }
    if (state == 3) {
      if (held()) {
        return false;
      }
      for (std::size_t k = 0; k < sends.size() && err.ok(); ++k) {
        post(e.be.isend(buf.data(), e.cfg.bw_size, peer, tag, sends[k]));
      }
      state = 1;
      return true;
    }
    if (t1 < 0 && poll(ack)) {
      t1 = e.be.wtime();
    }
    if (t1 < 0 || !poll_all(sends)) {
      return false;
    }
    timed += i >= warm ? t1 - t0 : 0.0;
    ++i;
    state = 0;
    t1 = -1.0;
    return true;
  }
  void abandon() {
    sends.push_back(ack);
    e.abandon(sends, buf, ack_in);
  }
};

// Receive src's window (in waves when --verify has too few buffers), then ack.
struct BwReceiver : RoleBase {
  std::size_t nbuf = 1, wave = 1, first = 0, count = 0;
  Bytes buf;
  std::vector<Request> recvs;
  Request ack;
  Bytes ack_out = Bytes(4);
  unsigned char *slot(std::size_t m) { return buf.data() + (m % nbuf) * e.cfg.bw_size; }
  void post_wave() {
    count = std::min(wave, static_cast<std::size_t>(e.cfg.window) - first);
    for (std::size_t k = 0; k < count && err.ok(); ++k) {
      post(e.be.irecv(slot(first + k), e.cfg.bw_size, peer, tag, recvs[k]));
    }
  }
  void check_wave() {
    for (std::size_t k = 0; k < count && e.cfg.bw_size > 0; ++k) {
      auto msg = static_cast<long>(first + k);
      corrupted = !e.check(slot(first + k), e.cfg.bw_size, peer, iter(), "allpairs bw", msg) || corrupted;
    }
  }
  bool step();
  void abandon() {
    recvs.push_back(ack);
    e.abandon(recvs, buf, ack_out);
  }
};

bool BwReceiver::step() {
  if (finished()) {
    return false;
  }
  if (state == 0) {
    first = 0;
    post_wave();
    state = 1;
    return true;
  }
  if (state == 1) {
    if (!poll_all(std::span<Request>(recvs.data(), count))) {
      return false;
    }
    if (first + count < static_cast<std::size_t>(e.cfg.window)) {
      check_wave();
      first += count;
      post_wave();
    } else {
      post(e.be.isend(ack_out.data(), 4, peer, tag + 1, ack));
      state = 2;
    }
    return true;
  }
  if (!poll(ack)) {
    return false;
  }
  check_wave();
  ++i;
  state = 0;
  return true;
}

class PairRun {
 public:
  PairRun(Ctx &ctx, const AllpairsConfig &cfg, Roles roles, int phase, ApLocal &local)
      : e_{ctx, ctx.be, cfg}, r_(roles), phase_(phase), local_(local) {}
  // `between` runs after the latency part (a barrier: every rank starts the
  // bandwidth part together, so a partner still waiting out a timeout cannot
  // make a healthy link time out too).
  void run(const std::function<void()> &between) {
    latency();
    between();
    bandwidth();
  }

 private:
  void latency();
  void bandwidth();
  template <typename A, typename B>
  void drive(A &a, B &b, const char *what);
  template <typename R>
  bool settle(R &r, const char *what);
  void note(const ApRecord &r);

  Engine e_;
  Roles r_;
  int phase_;
  ApLocal &local_;
};

// Steps both roles until each is done or failed; a role that makes no
// progress while the other makes none either fails after the pair timeout.
template <typename A, typename B>
void PairRun::drive(A &a, B &b, const char *what) {
  double deadline = e_.be.wtime() + e_.cfg.pair_timeout;
  while (!(a.finished() && b.finished())) {
    bool progressed = a.step();
    progressed = b.step() || progressed;
    if (progressed) {
      deadline = e_.be.wtime() + e_.cfg.pair_timeout;
      continue;
    }
    if (a.held() || b.held()) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));   // test hooks: leave the CPU to others
    }
    if (e_.be.wtime() > deadline) {
      char text[96];
      std::snprintf(text, sizeof text, "no progress within %g s (timeout)", e_.cfg.pair_timeout);
      for (RoleBase *r : {static_cast<RoleBase *>(&a), static_cast<RoleBase *>(&b)}) {
        if (!r->finished()) {
          r->post(Status{kStatusTimeout, text});
        }
      }
    }
  }
  if (!settle(a, what)) {
    r_.dst = -1;   // no bandwidth test on a link that failed the latency test
  }
  if (!settle(b, what)) {
    r_.src = -1;
  }
}

// Records what the role saw: corrupted data, or the failure of its link.
template <typename R>
bool PairRun::settle(R &r, const char *what) {
  int me = e_.ctx.rank;
  if (r.corrupted) {
    note(ApRecord{phase_, r.peer, me, "corrupted data received"});
  }
  if (r.err.ok()) {
    return true;
  }
  r.abandon();
  note(ApRecord{phase_, r.outgoing ? me : r.peer, r.outgoing ? r.peer : me, std::string(what) + ": " + r.err.text});
  return false;
}

void PairRun::note(const ApRecord &r) {
  for (const ApRecord &o : local_.records) {
    if (o.phase == r.phase && o.from == r.from && o.to == r.to && o.why == r.why) {
      return;
    }
  }
  local_.records.push_back(r);
}

// The cell is the median half round trip: one scheduling hiccup must not
// make a healthy link look slow.
void PairRun::latency() {
  const AllpairsConfig &c = e_.cfg;
  long total = c.lat_warmup + c.lat_iters;
  std::size_t n = c.lat_size + 1;
  LatSender s{{e_, r_.dst, r_.tag, total, c.lat_warmup, true}, Bytes(n), Bytes(n), {}, {}};
  LatResponder a{{e_, r_.src, r_.tag, total, c.lat_warmup, false}, Bytes(n), Bytes(n), {}, {}};
  e_.fill(a.out.data(), c.lat_size, r_.src, 0);
  drive(s, a, "latency exchange");
  if (r_.dst >= 0 && !s.rtts.empty()) {
    auto mid = s.rtts.begin() + static_cast<long>(s.rtts.size() / 2);
    std::nth_element(s.rtts.begin(), mid, s.rtts.end());
    local_.rows[phase_ * 2][static_cast<std::size_t>(r_.dst)] = *mid * 1e6 / 2.0;
  }
}

void PairRun::bandwidth() {
  const AllpairsConfig &c = e_.cfg;
  long total = c.bw_warmup + c.bw_iters;
  auto w = static_cast<std::size_t>(c.window);
  BwSender s{{e_, r_.dst, r_.tag + 2, total, c.bw_warmup, true}, Bytes(c.bw_size + 1), std::vector<Request>(w), {}};
  BwReceiver rcv{{e_, r_.src, r_.tag + 2, total, c.bw_warmup, false}};
  rcv.wave = w;
  if (e_.ctx.opt.verify) {
    rcv.nbuf = std::clamp<std::size_t>(kVerifyBufferBytes / std::max<std::size_t>(c.bw_size, 1), 1, w);
    rcv.wave = rcv.nbuf;
  }
  rcv.buf.assign(r_.src >= 0 ? c.bw_size * rcv.nbuf + 1 : 1, 0);
  rcv.recvs.resize(rcv.wave);
  drive(s, rcv, "bandwidth window");
  if (r_.dst >= 0 && s.timed > 0) {
    double bytes = static_cast<double>(c.bw_size) * c.window * static_cast<double>(c.bw_iters);
    local_.rows[phase_ * 2 + 1][static_cast<std::size_t>(r_.dst)] = bytes / 1e6 / s.timed;
  }
}

}  // namespace

void run_pair(Ctx &ctx, const AllpairsConfig &cfg, Roles roles, int phase, ApLocal &local,
              const std::function<void()> &between) {
  PairRun(ctx, cfg, roles, phase, local).run(between);
}

}  // namespace rdmxbench
