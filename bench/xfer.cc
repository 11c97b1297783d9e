// bench/xfer.cc: Waiter and Window.
#include "xfer.h"

#include "pattern.h"

#include <algorithm>

namespace rdmxbench {

namespace {

// Receive buffers --verify may use for one window (the rest come in waves).
constexpr std::size_t kVerifyBufferBytes = 64u << 20;

}  // namespace

Status Waiter::wait(std::span<Request> reqs) {
  if (deadline_ <= 0.0) {
    return be_.waitall(reqs);
  }
  for (;;) {
    bool all_done = true;
    for (Request &r : reqs) {
      bool done = true;
      Status s = be_.test(r, done);
      if (!s.ok()) {
        abandon(reqs);
        return s;
      }
      all_done = all_done && done;
    }
    if (all_done) {
      return {};
    }
    if (be_.wtime() > deadline_) {
      abandon(reqs);
      return Status{kStatusTimeout, "no completion within " + std::to_string(static_cast<int>(timeout_)) +
                                        " s (timeout)"};
    }
  }
}

void Waiter::abandon(std::span<Request> reqs) {
  for (Request &r : reqs) {
    be_.abandon(r);
  }
}

Window::Window(Ctx &ctx, const WindowSpec &spec) : ctx_(ctx), s_(spec) {
  auto w = static_cast<std::size_t>(s_.window);
  nbuf_ = 1;
  wave_ = w;
  if (ctx_.opt.verify && s_.size > 0) {
    nbuf_ = std::clamp<std::size_t>(kVerifyBufferBytes / s_.size, 1, w);
    wave_ = nbuf_;
  }
  if (s_.dst >= 0) {
    sbuf_.assign(std::max<std::size_t>(s_.size, 1), 0);
  }
  if (s_.src >= 0) {
    rbuf_.assign(std::max<std::size_t>(s_.size, 1) * nbuf_, 0);
  }
  reqs_.resize(wave_ + w);
}

void Window::prepare(std::uint64_t iter) {
  if (ctx_.opt.verify && s_.dst >= 0) {
    pattern_fill(sbuf_.data(), s_.size, pattern_seed(ctx_.rank, s_.dst, iter, s_.size));
  }
}

Status Window::post_receives(std::size_t first, std::size_t count) {
  for (std::size_t k = 0; k < count; ++k) {
    unsigned char *buf = rbuf_.data() + ((first + k) % nbuf_) * s_.size;
    Status s = ctx_.be.irecv(buf, s_.size, s_.src, s_.tag, reqs_[k]);
    if (!s.ok()) {
      return s;
    }
  }
  return {};
}

Status Window::post_sends(std::span<Request> sends) {
  for (Request &r : sends) {
    Status s = ctx_.be.isend(sbuf_.data(), s_.size, s_.dst, s_.tag, r);
    if (!s.ok()) {
      return s;
    }
  }
  return {};
}

// Sends the whole window at once; receives it in waves when --verify needs
// more distinct buffers than it may use (checking each full wave untimed).
Status Window::exchange(Waiter &w, std::uint64_t iter, Stopwatch &sw) {
  auto total = static_cast<std::size_t>(s_.window);
  std::span<Request> sends(reqs_.data() + wave_, s_.dst >= 0 ? total : 0);
  Status s = post_sends(sends);
  std::size_t first = 0;
  std::size_t count = 0;
  while (s.ok() && s_.src >= 0) {
    count = std::min(wave_, total - first);
    s = post_receives(first, count);
    if (!s.ok() || first + count == total) {
      break;
    }
    s = w.wait(std::span<Request>(reqs_.data(), count));
    if (s.ok()) {
      sw.stop();
      check_wave(iter, first, count);
      sw.start();
      first += count;
    }
  }
  last_first_ = first;
  last_count_ = s_.src >= 0 ? count : 0;
  if (s.ok()) {
    s = w.wait(std::span<Request>(reqs_.data(), last_count_));
  }
  if (s.ok()) {
    s = w.wait(sends);
  }
  if (!s.ok()) {
    w.abandon(reqs_);
  }
  return s;
}

Status Window::ack(Waiter &w) {
  Request r[2];
  if (s_.src >= 0) {
    Status s = ctx_.be.isend(ack_out_, sizeof ack_out_, s_.src, s_.ack_tag, r[0]);
    if (!s.ok()) {
      return s;
    }
  }
  if (s_.dst >= 0) {
    Status s = ctx_.be.irecv(ack_in_, sizeof ack_in_, s_.dst, s_.ack_tag, r[1]);
    if (!s.ok()) {
      w.abandon(std::span<Request>(r, 1));
      return s;
    }
  }
  return w.wait(std::span<Request>(r, 2));
}

void Window::check_last(std::uint64_t iter) { check_wave(iter, last_first_, last_count_); }

void Window::check_wave(std::uint64_t iter, std::size_t first, std::size_t count) {
  if (s_.src < 0 || s_.size == 0) {
    return;
  }
  for (std::size_t k = 0; k < count; ++k) {
    unsigned char *buf = rbuf_.data() + ((first + k) % nbuf_) * s_.size;
    ctx_.after_recv(buf, s_.size);
    if (!ctx_.opt.verify) {
      continue;
    }
    Where where{s_.test, s_.src, ctx_.rank, iter, s_.size, static_cast<long>(first + k)};
    if (!ctx_.verify(buf, s_.size, pattern_seed(s_.src, ctx_.rank, iter, s_.size), where)) {
      corrupted_ = true;
    }
  }
}

}  // namespace rdmxbench
