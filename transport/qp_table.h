// QP number -> peer, looked up once per receive completion (SRQ receives
// name their QP, not their endpoint). A flat open-addressed table: a power
// of two of slots, Fibonacci hashing (a multiply and a shift, no division),
// linear probing, at most half full so a miss ends at an empty slot soon,
// and deletion by backward shift (no tombstones to pile up when connections
// are rebuilt). Inserts and erases happen at connection time only; a lookup
// touches one or two adjacent slots.
#pragma once
#include <cstdint>
#include <vector>

namespace rdmx {

class QpTable {
public:
    QpTable() : slots_(kMinSlots), mask_(kMinSlots - 1), shift_(kHashBits - kMinBits) {}

    // The peer whose QP has this number, or -1.
    int find(uint32_t qpn) const {
        for (uint32_t i = home(qpn);; i = (i + 1) & mask_) {
            const Slot &s = slots_[i];
            if (s.peer < 0) return -1;
            if (s.qpn == qpn) return s.peer;
        }
    }

    // Maps qpn to peer (>= 0), replacing an earlier mapping of qpn.
    void insert(uint32_t qpn, int peer) {
        if (Slot *s = slot_of(qpn)) {
            s->peer = peer;
            return;
        }
        if ((count_ + 1) * kMaxLoadDen > slots_.size()) grow();
        place(qpn, peer);
        ++count_;
    }

    // Forgets qpn; false if it was not there.
    bool erase(uint32_t qpn) {
        Slot *s = slot_of(qpn);
        if (s == nullptr) return false;
        // Backward shift: pull later members of the cluster into the hole
        // unless their home lies cyclically in (hole, j], so every probe
        // sequence stays unbroken without tombstones.
        uint32_t hole = static_cast<uint32_t>(s - slots_.data());
        for (uint32_t j = (hole + 1) & mask_; slots_[j].peer >= 0; j = (j + 1) & mask_) {
            const uint32_t dist = (j - home(slots_[j].qpn)) & mask_;
            if (dist >= ((j - hole) & mask_)) {
                slots_[hole] = slots_[j];
                hole = j;
            }
        }
        slots_[hole] = Slot{};
        --count_;
        return true;
    }

    size_t size() const { return count_; }
    size_t capacity() const { return slots_.size(); }

private:
    struct Slot {
        uint32_t qpn = 0;
        int32_t peer = -1;  // -1: empty
    };
    static constexpr uint32_t kHashBits = 32;
    static constexpr uint32_t kMinBits = 4;
    static constexpr uint32_t kMinSlots = 1u << kMinBits;
    static constexpr size_t kMaxLoadDen = 2;  // at most 1/kMaxLoadDen of the slots used
    static constexpr uint32_t kFibonacci = 0x9e3779b9u;  // 2^32 / golden ratio: spreads sequential QP numbers

    uint32_t home(uint32_t qpn) const { return (qpn * kFibonacci) >> shift_; }

    Slot *slot_of(uint32_t qpn) {
        for (uint32_t i = home(qpn);; i = (i + 1) & mask_) {
            Slot &s = slots_[i];
            if (s.peer < 0) return nullptr;
            if (s.qpn == qpn) return &s;
        }
    }

    void place(uint32_t qpn, int peer) {
        uint32_t i = home(qpn);
        while (slots_[i].peer >= 0) i = (i + 1) & mask_;
        slots_[i] = Slot{qpn, static_cast<int32_t>(peer)};
    }

    void grow() {
        std::vector<Slot> old;
        old.swap(slots_);
        slots_.assign(old.size() * 2, Slot{});
        mask_ = static_cast<uint32_t>(slots_.size() - 1);
        --shift_;
        for (const Slot &s : old)
            if (s.peer >= 0) place(s.qpn, s.peer);
    }

    std::vector<Slot> slots_;
    uint32_t mask_;
    uint32_t shift_;  // kHashBits - log2(slots)
    size_t count_ = 0;
};

}  // namespace rdmx
