// Who keeps which connection when ranks connect on demand (RDMX_CONNECT=lazy).
// Pure logic, no verbs: the connection manager (cm.cc) asks it on every
// connect request, and a unit test checks it without a device.
//
// In a full mesh the lower rank always dials and the higher accepts, so two
// requests for one pair never meet. On demand either side may dial first,
// and both may dial at once (crossed connects). The rule: the lower rank's
// connection wins. The lower rank refuses a higher rank's request while its
// own is in flight (RejectReason::kCrossed) and the higher rank, told so,
// waits for the lower rank's request; a higher rank that receives the lower
// rank's request while dialling drops its own attempt and accepts. Either
// side ends with exactly one connection, whatever order the packets take.
//
// The rule assumes both ranks of a pair connect the same way. A mesh rank
// never dials a higher rank and refuses its requests (kRejectDirection), so
// a lazy higher rank would wait for a connection that never comes until
// RDMX_CONNECT_TIMEOUT. Each rank therefore publishes its mode beside its rc
// address (RcAddr::flags) and rdmx_init refuses a job whose ranks disagree.
#pragma once
#include <cstdint>

namespace rdmx {

// The receiving rank's endpoint for the requesting peer, as the rule sees it.
enum class PeerConn : uint8_t {
    kNone,       // nothing started (or a failed attempt waiting to retry)
    kDialing,    // our own request is in flight (resolving, connecting)
    kAwaiting,   // we were told kCrossed: the peer's request is coming
    kAccepting,  // we accepted an earlier request of that peer (a retry supersedes it)
    kUp,         // connected, or failed for good
};

enum class RequestVerdict : uint8_t {
    kAccept,           // accept it (an earlier accepted request of the peer is dropped)
    kAcceptDropOwn,    // drop our own attempt in flight, then accept
    kRejectCrossed,    // refuse with RejectReason::kCrossed: ours wins
    kRejectDirection,  // mesh: only the lower rank dials
    kRejectDuplicate,  // that pair is connected (or lost) already
};

// RcAddr::flags bits: the rank's resolved RDMX_CONNECT (auto already decided).
constexpr uint16_t kConnectModeMesh = 1;
constexpr uint16_t kConnectModeLazy = 2;
constexpr uint16_t kConnectModeMask = kConnectModeMesh | kConnectModeLazy;

constexpr uint16_t connect_mode_flags(bool lazy) { return lazy ? kConnectModeLazy : kConnectModeMesh; }

// True when a peer's published flags name the other mode. A peer that states
// none (0: a raw test peer joining the bootstrap by hand) is not judged.
constexpr bool connect_modes_clash(bool lazy, uint16_t peer_flags) {
    const uint16_t theirs = peer_flags & kConnectModeMask;
    return theirs != 0 && theirs != connect_mode_flags(lazy);
}

constexpr RequestVerdict judge_request(bool lazy, int me, int from, PeerConn mine) {
    if (mine == PeerConn::kUp) return RequestVerdict::kRejectDuplicate;
    if (!lazy) return from < me ? RequestVerdict::kAccept : RequestVerdict::kRejectDirection;
    if (mine != PeerConn::kDialing) return RequestVerdict::kAccept;
    return from < me ? RequestVerdict::kAcceptDropOwn : RequestVerdict::kRejectCrossed;
}

}  // namespace rdmx
