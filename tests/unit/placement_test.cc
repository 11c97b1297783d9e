// progress_cpuset on hwloc synthetic topologies (no dependence on the host).
#include <gtest/gtest.h>
#include <hwloc.h>

#include <cstdlib>
#include <string>

#include "core/placement.h"

namespace {

std::string list_of(hwloc_const_bitmap_t b) {
    char *s = nullptr;
    if (hwloc_bitmap_list_asprintf(&s, b) < 0 || s == nullptr) return "?";
    std::string r = s;
    std::free(s);
    return r;
}

struct Bitmap {
    hwloc_bitmap_t b = hwloc_bitmap_alloc();
    Bitmap() = default;
    explicit Bitmap(const char *list) { hwloc_bitmap_list_sscanf(b, list); }
    ~Bitmap() { hwloc_bitmap_free(b); }
    Bitmap(const Bitmap &) = delete;
    Bitmap &operator=(const Bitmap &) = delete;
    operator hwloc_bitmap_t() const { return b; }
};

class Topo {
public:
    explicit Topo(const char *synthetic) {
        ok_ = hwloc_topology_init(&t_) == 0 && hwloc_topology_set_synthetic(t_, synthetic) == 0 &&
              hwloc_topology_load(t_) == 0;
    }
    ~Topo() { hwloc_topology_destroy(t_); }
    bool ok() const { return ok_; }
    hwloc_topology_t get() const { return t_; }
    hwloc_const_cpuset_t node_cpuset(unsigned os_index) const {
        hwloc_obj_t n = hwloc_get_numanode_obj_by_os_index(t_, os_index);
        return n != nullptr ? n->cpuset : nullptr;
    }

private:
    hwloc_topology_t t_{};
    bool ok_ = false;
};

// 2 packages x 2 NUMA nodes x 2 cores: node i holds PUs 2i and 2i+1.
constexpr const char *kFourNodes = "pack:2 numa:2 core:2 pu:1";
// 2 packages, each one NUMA node of 4 cores: node i holds PUs 4i..4i+3.
constexpr const char *kTwoNodes = "pack:2 [numa] core:4 pu:1";

TEST(Placement, SyntheticTopologiesLoadAsExpected) {
    Topo a(kFourNodes);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(hwloc_get_nbobjs_by_type(a.get(), HWLOC_OBJ_NUMANODE), 4);
    EXPECT_EQ(hwloc_get_nbobjs_by_type(a.get(), HWLOC_OBJ_PU), 8);
    ASSERT_NE(a.node_cpuset(1), nullptr);
    EXPECT_EQ(list_of(a.node_cpuset(1)), "2-3");
    Topo b(kTwoNodes);
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(hwloc_get_nbobjs_by_type(b.get(), HWLOC_OBJ_NUMANODE), 2);
    EXPECT_EQ(list_of(b.node_cpuset(1)), "4-7");
}

TEST(Placement, DeviceNodeGivesExactlyThatNodesCpus) {
    Topo t(kFourNodes);
    ASSERT_TRUE(t.ok());
    Bitmap out;
    std::string why = rdmx::progress_cpuset(t.get(), 1, nullptr, out);
    EXPECT_TRUE(hwloc_bitmap_isequal(out, t.node_cpuset(1))) << list_of(out);
    EXPECT_EQ(list_of(out), "2-3");
    EXPECT_NE(why.find("NUMA node 1"), std::string::npos) << why;
    // Every node, in the other topology too.
    for (unsigned n = 0; n < 4; ++n) {
        rdmx::progress_cpuset(t.get(), static_cast<int>(n), nullptr, out);
        EXPECT_TRUE(hwloc_bitmap_isequal(out, t.node_cpuset(n))) << n << ": " << list_of(out);
    }
    Topo u(kTwoNodes);
    ASSERT_TRUE(u.ok());
    rdmx::progress_cpuset(u.get(), 1, nullptr, out);
    EXPECT_EQ(list_of(out), "4-7");
}

TEST(Placement, BindingCoveringTheNodeIsNarrowedToIt) {
    Topo t(kFourNodes);
    ASSERT_TRUE(t.ok());
    Bitmap binding("0-5");
    Bitmap out;
    rdmx::progress_cpuset(t.get(), 1, binding, out);
    EXPECT_EQ(list_of(out), "2-3");
    // A binding holding only part of the node: the intersection.
    Bitmap part("1-2");
    rdmx::progress_cpuset(t.get(), 1, part, out);
    EXPECT_EQ(list_of(out), "2");
}

TEST(Placement, UnknownDeviceNodeGivesTheBinding) {
    Topo t(kFourNodes);
    ASSERT_TRUE(t.ok());
    Bitmap binding("0-2,6");
    Bitmap out("7");  // stale content must be overwritten
    std::string why = rdmx::progress_cpuset(t.get(), -1, binding, out);
    EXPECT_TRUE(hwloc_bitmap_isequal(out, binding)) << list_of(out);
    EXPECT_NE(why.find("process binding"), std::string::npos) << why;
    // No binding at all: the whole machine.
    rdmx::progress_cpuset(t.get(), -1, nullptr, out);
    EXPECT_EQ(list_of(out), "0-7");
}

TEST(Placement, BindingExcludingTheNodeFallsBackToTheBinding) {
    Topo t(kFourNodes);
    ASSERT_TRUE(t.ok());
    Bitmap binding("0-1,4-7");
    Bitmap out;
    std::string why = rdmx::progress_cpuset(t.get(), 1, binding, out);
    EXPECT_TRUE(hwloc_bitmap_isequal(out, binding)) << list_of(out);
    EXPECT_NE(why.find("no allowed core"), std::string::npos) << why;
}

TEST(Placement, NodeNotInTopologyGivesTheBinding) {
    Topo t(kFourNodes);
    ASSERT_TRUE(t.ok());
    Bitmap binding("3-6");
    Bitmap out;
    for (int node : {4, 99}) {
        std::string why = rdmx::progress_cpuset(t.get(), node, binding, out);
        EXPECT_TRUE(hwloc_bitmap_isequal(out, binding)) << node << ": " << list_of(out);
        EXPECT_NE(why.find("not in topology"), std::string::npos) << why;
    }
}

TEST(Placement, EmptyBindingMeansWholeMachine) {
    Topo t(kFourNodes);
    ASSERT_TRUE(t.ok());
    Bitmap empty;
    Bitmap out;
    rdmx::progress_cpuset(t.get(), 2, empty, out);
    EXPECT_EQ(list_of(out), "4-5");
    rdmx::progress_cpuset(t.get(), -1, empty, out);
    EXPECT_EQ(list_of(out), "0-7");
}

TEST(Placement, DeviceNumaNodeOfMissingDeviceIsUnknown) {
    EXPECT_EQ(rdmx::device_numa_node("no_such_rdma_device_0"), -1);
    EXPECT_EQ(rdmx::device_numa_node(""), -1);
}

}  // namespace
