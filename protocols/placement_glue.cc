#include "protocols/placement_glue.h"

#include <hwloc.h>

#include <mutex>

#include "core/log.h"
#include "core/placement.h"

namespace rdmx {

namespace {
// The machine's topology, loaded once per process: the load reads much of
// sysfs and takes hundreds of milliseconds of CPU under emulation, and a
// job that initializes several contexts (or one after another) would pay it
// each time. Read-only use from several threads is safe (hwloc's rule).
hwloc_topology_t topology() {
    static hwloc_topology_t topo = nullptr;
    static std::once_flag once;
    std::call_once(once, [] {
        hwloc_topology_t t;
        if (hwloc_topology_init(&t) != 0) return;
        if (hwloc_topology_load(t) != 0) {
            hwloc_topology_destroy(t);
            return;
        }
        topo = t;
    });
    return topo;
}

std::string place(const char *ibdev, bool bind) {
    hwloc_topology_t topo = topology();
    if (topo == nullptr) return "unknown (hwloc topology load failed)";
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
    return desc;
}
}  // namespace

void apply_progress_placement(Ctx *c) {
    std::string d = place(c->rc ? c->rc->device_name() : "", true);
    RDMX_INFO("progress thread on %s", d.c_str());
}

std::string describe_progress_placement(const char *ibdev) { return place(ibdev, false); }

}  // namespace rdmx
