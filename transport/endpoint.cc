#include "transport/endpoint.h"

#include "core/log.h"

namespace rdmx {

const char *conn_state_name(ConnState s) {
    switch (s) {
    case ConnState::kIdle: return "IDLE";
    case ConnState::kResolvingAddr: return "RESOLVING_ADDR";
    case ConnState::kResolvingRoute: return "RESOLVING_ROUTE";
    case ConnState::kConnecting: return "CONNECTING";
    case ConnState::kAccepting: return "ACCEPTING";
    case ConnState::kBackoff: return "BACKOFF";
    case ConnState::kAwaitPeer: return "AWAIT_PEER";
    case ConnState::kConnected: return "CONNECTED";
    case ConnState::kDisconnecting: return "DISCONNECTING";
    case ConnState::kClosed: return "CLOSED";
    case ConnState::kFailed: return "FAILED";
    }
    return "?";
}

void Endpoint::set_state(ConnState s) {
    if (s == state) return;
    RDMX_DEBUG("conn peer %d (%s) qp 0x%x: %s -> %s", peer, addr.c_str(), qp_num, conn_state_name(state),
               conn_state_name(s));
    state = s;
}

}  // namespace rdmx
