#include "transport/self.h"

#include <cstring>
#include <deque>
#include <vector>

#include "core/log.h"

namespace rdmx {

namespace {

// An exposure: key = slot index + generation in the top half, so a stale
// key (an exposure revoked and its slot reused) fails.
struct Exposure {
    const char *buf = nullptr;
    size_t len = 0;
    Access access = Access::kRemoteRead;
    uint16_t gen = 0;
    bool live = false;
};

struct RmaDone {
    uint64_t id;
    uint32_t bytes;
    bool ok;
};

constexpr size_t kChunk = size_t{1} << 30;  // one memcpy per transfer in practice
constexpr uint32_t kSlotBits = 16;

class SelfTransport final : public Transport {
public:
    SelfTransport(int rank, size_t eager_limit, TransportSink *sink)
        : rank_(rank), buf_size_(sizeof(wire::MsgHdr) + eager_limit), sink_(sink) {}

    TransportKind kind() const override { return TransportKind::kSelf; }
    const char *name() const override { return "self"; }
    bool usable(int peer) const override { return peer == rank_ && !closed_; }
    void close_peer(int, rdmx_status_t) override { closed_ = true; }
    const char *peer_addr(int) const override { return "self"; }
    bool can_send(int, size_t body_len, bool, unsigned) override {
        return sizeof(wire::MsgHdr) + body_len <= buf_size_;
    }
    bool send(int peer, const MsgOut &m, bool ctrl) override;
    void release(int, uint64_t token) override { free_.push_back(static_cast<uint32_t>(token)); }
    rdmx_status_t expose(int, void *buf, size_t len, Access a, XferMem *m, uint32_t *key) override;
    bool can_expose(int) override { return true; }
    bool unexpose(int peer, XferMem *m, uint64_t) override {
        release_mem(peer, m);
        return true;
    }
    rdmx_status_t prepare_local(void *, size_t, bool, XferMem *) override { return RDMX_OK; }
    void release_mem(int, XferMem *m) override;
    uint32_t rma_room(int, bool, uint32_t) override { return 1; }
    size_t rma_chunk() const override { return kChunk; }
    bool get(int peer, void *dst, const XferMem &, uint64_t raddr, uint32_t key, size_t len, uint64_t id) override {
        return copy(peer, dst, raddr, key, len, id, Access::kRemoteRead);
    }
    bool put(int peer, const void *src, const XferMem &, uint64_t raddr, uint32_t key, size_t len,
             uint64_t id) override {
        return copy(peer, const_cast<void *>(src), raddr, key, len, id, Access::kRemoteWrite);
    }
    int progress(bool housekeeping) override;
    bool arm() override { return queue_.empty() && done_.empty(); }
    int fds(pollfd *, int, bool) override { return 0; }
    void after_sleep() override {}
    bool quiet() override { return queue_.empty() && done_.empty(); }
    void flush() override {}
    void disconnect_all(double) override {}

private:
    bool copy(int peer, void *local, uint64_t raddr, uint32_t key, size_t len, uint64_t id, Access want);

    int rank_;
    size_t buf_size_;
    TransportSink *sink_;
    bool closed_ = false;
    bool in_progress_ = false;  // progress is not re-entered from its own upcalls
    uint32_t seq_ = 0;
    std::vector<std::unique_ptr<char[]>> bufs_;
    std::vector<uint32_t> free_;
    std::deque<std::pair<uint32_t, uint32_t>> queue_;  // (buffer, length), in send order
    std::vector<Exposure> exposures_;
    std::vector<uint32_t> free_exposures_;
    std::deque<RmaDone> done_;
};

bool SelfTransport::send(int, const MsgOut &m, bool) {
    uint32_t idx;
    if (free_.empty()) {
        bufs_.emplace_back(new char[buf_size_]);
        idx = static_cast<uint32_t>(bufs_.size() - 1);
    } else {
        idx = free_.back();
        free_.pop_back();
    }
    wire::MsgHdr h{wire::kVersion, static_cast<uint8_t>(m.type), m.space, 0, m.tag, 0, seq_++, m.length, m.cookie, m.comm, 0};
    char *b = bufs_[idx].get();
    std::memcpy(b, &h, sizeof(h));
    if (m.body_len > 0) std::memcpy(b + sizeof(h), m.body, m.body_len);
    queue_.emplace_back(idx, static_cast<uint32_t>(sizeof(h) + m.body_len));
    idle_ = false;
    return true;
}

rdmx_status_t SelfTransport::expose(int, void *buf, size_t len, Access a, XferMem *m, uint32_t *key) {
    uint32_t slot;
    if (free_exposures_.empty()) {
        if (exposures_.size() >= (1u << kSlotBits)) return RDMX_ERR_NO_MEMORY;
        exposures_.emplace_back();
        slot = static_cast<uint32_t>(exposures_.size() - 1);
    } else {
        slot = free_exposures_.back();
        free_exposures_.pop_back();
    }
    Exposure &e = exposures_[slot];
    e.buf = static_cast<const char *>(buf);
    e.len = len;
    e.access = a;
    e.live = true;
    m->window = static_cast<int32_t>(slot);
    *key = slot | (static_cast<uint32_t>(e.gen) << kSlotBits);
    return RDMX_OK;
}

void SelfTransport::release_mem(int, XferMem *m) {
    if (m->window >= 0) {
        Exposure &e = exposures_[static_cast<size_t>(m->window)];
        e.live = false;
        ++e.gen;
        free_exposures_.push_back(static_cast<uint32_t>(m->window));
    }
    *m = XferMem{};
}

// The range must lie inside a live exposure with that access; anything else
// is the engine's own bug (there is no other party), reported as a failed
// transfer rather than a wild copy.
bool SelfTransport::copy(int, void *local, uint64_t raddr, uint32_t key, size_t len, uint64_t id, Access want) {
    const uint32_t slot = key & ((1u << kSlotBits) - 1);
    bool ok = slot < exposures_.size();
    if (ok) {
        const Exposure &e = exposures_[slot];
        const uintptr_t lo = reinterpret_cast<uintptr_t>(e.buf);
        ok = e.live && e.access == want && (key >> kSlotBits) == e.gen && raddr >= lo && raddr - lo <= e.len &&
             len <= e.len - (raddr - lo);
    }
    if (!ok) RDMX_ERROR("self: a %zu-byte %s outside any exposure (key 0x%x)", len,
                        want == Access::kRemoteRead ? "get" : "put", key);
    else if (want == Access::kRemoteRead) std::memcpy(local, reinterpret_cast<const void *>(raddr), len);
    else std::memcpy(reinterpret_cast<void *>(raddr), local, len);
    done_.push_back({id, static_cast<uint32_t>(len), ok});
    idle_ = false;
    return true;
}

int SelfTransport::progress(bool) {
    if (in_progress_) return 0;
    in_progress_ = true;
    int n = 0;
    // Until both queues are empty: an arrival may post more (a FIN after a get).
    while (!queue_.empty() || !done_.empty()) {
        while (!queue_.empty()) {
            const auto [idx, len] = queue_.front();
            queue_.pop_front();
            wire::MsgHdr h;
            std::memcpy(&h, bufs_[idx].get(), sizeof(h));
            if (!sink_->on_arrival(rank_, h, bufs_[idx].get(), len, idx)) free_.push_back(idx);
            ++n;
        }
        while (!done_.empty()) {
            const RmaDone d = done_.front();
            done_.pop_front();
            sink_->on_rma_done(rank_, d.id, d.bytes, d.ok);
            ++n;
        }
    }
    in_progress_ = false;
    idle_ = true;
    return n;
}

}  // namespace

std::unique_ptr<Transport> self_open(int rank, size_t eager_limit, TransportSink *sink) {
    return std::make_unique<SelfTransport>(rank, eager_limit, sink);
}

}  // namespace rdmx
