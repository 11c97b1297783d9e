#include "protocols/placement_glue.h"

#include <hwloc.h>

#include "core/log.h"
#include "core/placement.h"

namespace rdmx {

namespace {
std::string place(const char *ibdev, bool bind) {
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0) return "unknown (hwloc init failed)";
    if (hwloc_topology_load(topo) != 0) {
        hwloc_topology_destroy(topo);
        return "unknown (hwloc load failed)";
    }
    hwloc_bitmap_t binding = hwloc_bitmap_alloc();
    hwloc_bitmap_t out = hwloc_bitmap_alloc();
    if (hwloc_get_cpubind(topo, binding, HWLOC_CPUBIND_PROCESS) != 0) hwloc_bitmap_zero(binding);
    std::string why = progress_cpuset(topo, device_numa_node(ibdev), binding, out);
    char *list = nullptr;
    hwloc_bitmap_list_asprintf(&list, out);
    std::string desc = std::string("cpus ") + (list ? list : "?") + ": " + why;
    free(list);
    if (bind && hwloc_set_cpubind(topo, out, HWLOC_CPUBIND_THREAD) != 0)
        RDMX_DEBUG("progress: hwloc_set_cpubind(%s) failed", desc.c_str());
    hwloc_bitmap_free(out);
    hwloc_bitmap_free(binding);
    hwloc_topology_destroy(topo);
    return desc;
}
}  // namespace

void apply_progress_placement(Ctx *c) {
    std::string d = place(c->dev.name(), true);
    RDMX_INFO("progress thread on %s", d.c_str());
}

std::string describe_progress_placement(const char *ibdev) { return place(ibdev, false); }

}  // namespace rdmx
