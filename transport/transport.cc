#include "transport/transport.h"

namespace rdmx {

const char *transport_kind_name(TransportKind k) {
    switch (k) {
    case TransportKind::kSelf: return "self";
    case TransportKind::kSm: return "sm";
    case TransportKind::kRc: return "rc";
    }
    return "?";
}

}  // namespace rdmx
