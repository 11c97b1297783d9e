// bench/xfer.h: building blocks shared by bw, bibw, mr and allpairs: a
// waiter with an optional deadline and the OSU window (W nonblocking sends,
// then a 4-byte acknowledgement).
#pragma once

#include "common.h"

#include <span>

namespace rdmxbench {

// Waits for requests. Without a timeout it is the backend's waitall (rdmx has
// its own deadlines). With one (allpairs), arm() starts the clock and wait()
// polls; at the deadline, or at the first failed request, what is still
// pending is abandoned and the status says why.
class Waiter {
 public:
  Waiter(Backend &be, double timeout_s) : be_(be), timeout_(timeout_s) {}
  void arm() { deadline_ = timeout_ > 0 ? be_.wtime() + timeout_ : 0.0; }
  Status wait(std::span<Request> reqs);
  Status wait_one(Request &r) { return wait(std::span<Request>(&r, 1)); }
  void abandon(std::span<Request> reqs);

 private:
  Backend &be_;
  double timeout_;
  double deadline_ = 0.0;
};

struct WindowSpec {
  const char *test = "bw";
  std::size_t size = 0;
  int window = 64;
  int dst = -1;   // send the window to this rank (-1: no sending role)
  int src = -1;   // receive a window from this rank (-1: no receiving role)
  int tag = kTagData;
  int ack_tag = kTagAck;
};

// One side of the OSU bandwidth loop; a rank may both send and receive
// (bibw, allpairs shift steps). Usage per iteration:
//   prepare(i); sw.start(); exchange(w, i, sw); ack(w); sw.stop(); check_last(i);
class Window {
 public:
  Window(Ctx &ctx, const WindowSpec &spec);
  void prepare(std::uint64_t iter);   // fill the send payload (untimed)
  Status exchange(Waiter &w, std::uint64_t iter, Stopwatch &sw);
  Status ack(Waiter &w);
  void check_last(std::uint64_t iter);
  bool corrupted() const { return corrupted_; }

 private:
  Status post_sends(std::span<Request> sends);
  Status post_receives(std::size_t first, std::size_t count);
  void check_wave(std::uint64_t iter, std::size_t first, std::size_t count);

  Ctx &ctx_;
  WindowSpec s_;
  std::size_t nbuf_;    // distinct receive buffers (1 without --verify, like OSU)
  std::size_t wave_;    // receives posted at once
  Bytes sbuf_;
  Bytes rbuf_;
  std::vector<Request> reqs_;   // [0, wave_): receives, then the sends
  std::size_t last_first_ = 0;
  std::size_t last_count_ = 0;
  bool corrupted_ = false;
  unsigned char ack_out_[4] = {};
  unsigned char ack_in_[4] = {};
};

}  // namespace rdmxbench
