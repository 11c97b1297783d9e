#include "core/placement.h"

#include <cstdio>
#include <cstdlib>

namespace rdmx {

std::string progress_cpuset(hwloc_topology_t topo, int device_numa, hwloc_const_cpuset_t binding,
                            hwloc_cpuset_t out) {
    hwloc_const_cpuset_t all = hwloc_topology_get_topology_cpuset(topo);
    hwloc_bitmap_copy(out, binding != nullptr && !hwloc_bitmap_iszero(binding) ? binding : all);
    if (device_numa < 0) return "process binding (device locality unknown)";
    hwloc_obj_t node = hwloc_get_numanode_obj_by_os_index(topo, static_cast<unsigned>(device_numa));
    if (node == nullptr || node->cpuset == nullptr) return "process binding (device NUMA node not in topology)";
    hwloc_bitmap_t both = hwloc_bitmap_alloc();
    hwloc_bitmap_and(both, out, node->cpuset);
    std::string what;
    if (hwloc_bitmap_iszero(both)) {
        what = "process binding (no allowed core on the device's NUMA node " + std::to_string(device_numa) + ")";
    } else {
        hwloc_bitmap_copy(out, both);
        what = "NUMA node " + std::to_string(device_numa) + " (nearest the device)";
    }
    hwloc_bitmap_free(both);
    return what;
}

int device_numa_node(const char *ibdev) {
    char path[256];
    std::snprintf(path, sizeof(path), "/sys/class/infiniband/%s/device/numa_node", ibdev);
    FILE *f = std::fopen(path, "r");
    if (f == nullptr) return -1;
    int node = -1;
    if (std::fscanf(f, "%d", &node) != 1) node = -1;
    std::fclose(f);
    return node;
}

}  // namespace rdmx
