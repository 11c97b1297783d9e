#include "rdmx/rdmx.h"

extern "C" const char *rdmx_strerror(rdmx_status_t status) {
    switch (status) {
    case RDMX_OK: return "success";
    case RDMX_INPROGRESS: return "operation in progress";
    case RDMX_ERR_INVALID_ARG: return "invalid argument";
    case RDMX_ERR_TRUNCATE: return "message truncated: receive buffer too small";
    case RDMX_ERR_PEER_LOST: return "peer lost (process died, disconnected or unreachable)";
    case RDMX_ERR_TIMEOUT: return "timed out waiting for a peer";
    case RDMX_ERR_CONNECT: return "connection set-up failed";
    case RDMX_ERR_DEVICE: return "RDMA device error";
    case RDMX_ERR_NO_DEVICE: return "no usable RDMA device";
    case RDMX_ERR_NO_MEMORY: return "out of memory (or memory registration failed)";
    case RDMX_ERR_CANCELED: return "operation canceled";
    case RDMX_ERR_INTERNAL: return "internal error";
    case RDMX_ERR_PROTOCOL: return "protocol error: malformed message from peer";
    case RDMX_ERR_UNSUPPORTED: return "operation not supported";
    }
    return "unknown status";
}
