// Where the progress thread runs: the cores of the NUMA node nearest the
// device (its PCI locality when known), within the process's binding.
#pragma once
#include <hwloc.h>

#include <string>

namespace rdmx {

// Computes the cpuset for a progress thread into `out`.
//  device_numa: the device's NUMA node OS index, or -1 when unknown;
//  binding: the process's allowed CPUs (NULL = whole machine).
// Falls back to `binding` when the device's node has no CPU in it.
// Returns a short human description of the choice.
std::string progress_cpuset(hwloc_topology_t topo, int device_numa, hwloc_const_cpuset_t binding,
                            hwloc_cpuset_t out);

// Reads /sys/class/infiniband/<dev>/device/numa_node; -1 when absent
// (virtual devices such as rxe have no PCI locality).
int device_numa_node(const char *ibdev);

}  // namespace rdmx
