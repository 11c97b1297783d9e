// Config: parse_size and Config::load (defaults < environment < struct).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "core/config.h"
#include "core/log.h"
#include "log_prefix.h"

namespace {

using rdmx::Config;
using rdmx::ConfigSource;
using rdmx::parse_size;

std::optional<size_t> size_of(const char *s) {
    size_t v = 0xdeadbeef;
    if (!parse_size(s, &v)) return std::nullopt;
    return v;
}

TEST(ParseSize, PlainAndSuffixed) {
    EXPECT_EQ(size_of("0"), size_t{0});
    EXPECT_EQ(size_of("4096"), size_t{4096});
    EXPECT_EQ(size_of("8k"), size_t{8192});
    EXPECT_EQ(size_of("8K"), size_t{8192});
    EXPECT_EQ(size_of("1M"), size_t{1} << 20);
    EXPECT_EQ(size_of("1m"), size_t{1} << 20);
    EXPECT_EQ(size_of("2g"), size_t{2} << 30);
    EXPECT_EQ(size_of("2G"), size_t{2} << 30);
    EXPECT_EQ(size_of("1kb"), size_t{1024});
    EXPECT_EQ(size_of("3MB"), size_t{3} << 20);
    EXPECT_EQ(size_of("0k"), size_t{0});
}

TEST(ParseSize, Garbage) {
    for (const char *s : {"", "abc", "k", "12x", "1kk", "1 k", "1k ", "4096 ", "1.5k", "0x10", "1t", "1kbb", "kb"})
        EXPECT_EQ(size_of(s), std::nullopt) << "'" << s << "'";
    size_t v = 77;
    EXPECT_FALSE(parse_size(nullptr, &v));
    EXPECT_FALSE(parse_size("junk", &v));
    EXPECT_EQ(v, 77u) << "a failed parse leaves the output alone";
}

TEST(ParseSize, Overflow) {
    EXPECT_EQ(size_of("18446744073709551615"), std::numeric_limits<size_t>::max());
    EXPECT_EQ(size_of("18446744073709551616"), std::nullopt);
    EXPECT_EQ(size_of("99999999999999999999999"), std::nullopt);
    EXPECT_EQ(size_of("18014398509481983k"), std::numeric_limits<size_t>::max() & ~size_t{1023});
    EXPECT_EQ(size_of("18014398509481984k"), std::nullopt);  // 2^54 KiB = 2^64
    EXPECT_EQ(size_of("17592186044416m"), std::nullopt);     // 2^44 MiB
    EXPECT_EQ(size_of("17179869184g"), std::nullopt);        // 2^34 GiB
    EXPECT_EQ(size_of("17179869183g"), (size_t{17179869183} << 30));
}

TEST(ParseSize, Negative) {
    for (const char *s : {"-1", "-0", "-5k", "-18446744073709551615"})
        EXPECT_EQ(size_of(s), std::nullopt) << "'" << s << "'";
}

// strtoull skips leading white space and accepts a sign: " -1" must not
// become SIZE_MAX.
TEST(ParseSize, NegativeAfterWhitespace) {
    for (const char *s : {" -1", "\t-2", " -0"}) EXPECT_EQ(size_of(s), std::nullopt) << "'" << s << "'";
}

// ---- Config::load ------------------------------------------------------------

const char *const kVars[] = {"RDMX_DEVICE",       "RDMX_IFADDR",        "RDMX_EAGER_LIMIT",
                             "RDMX_RNDV_THRESH",  "RDMX_SRQ_DEPTH",     "RDMX_UNEXPECTED_LIMIT",
                             "RDMX_PROGRESS",     "RDMX_LOG_LEVEL",     "RDMX_CONNECT_TIMEOUT",
                             "RDMX_PEER_TIMEOUT", "RDMX_SPIN_US",       "RDMX_RNDV_READS",
                             "RDMX_RNDV_CHUNK",   "RDMX_RCACHE",        "RDMX_RCACHE_MAX",
                             "RDMX_RCACHE_MAX_REGIONS", "RDMX_RNDV_PROTO",
                             "RDMX_RNDV_WINDOWS", "RDMX_UNEXPECTED_MAX", "RDMX_BOOTSTRAP",
                             "RDMX_SQ_DEPTH",     "RDMX_TRANSPORTS",    "RDMX_NODE_ID",
                             "RDMX_SM_CMA",       "RDMX_SM_CMA_THRESH", "RDMX_SM_SLOTS",
                             "RDMX_THREADS",      "RDMX_SPIN_MAX_US",   "RDMX_YIELD",
                             "RDMX_LOG_FILE",     "RDMX_CHECK_ARGS",    "RDMX_CONNECT",
                             "RDMX_LAZY_PEERS"};

// Clears every RDMX_* variable for the test and restores them after.
class ConfigLoadTest : public ::testing::Test {
protected:
    void SetUp() override {
        for (const char *v : kVars) {
            if (const char *e = std::getenv(v)) saved_[v] = e;
            unsetenv(v);
        }
        saved_level_ = rdmx::g_log_level.load();
    }
    void TearDown() override {
        for (const char *v : kVars) unsetenv(v);
        for (auto &[k, v] : saved_) setenv(k.c_str(), v.c_str(), 1);
        rdmx::log_set_level(saved_level_);
    }
    static const rdmx::ConfigEntry *entry(const Config &c, const char *env) {
        for (const auto &e : c.entries)
            if (std::strcmp(e.env, env) == 0) return &e;
        return nullptr;
    }

    std::map<std::string, std::string> saved_;
    int saved_level_ = 1;
};

TEST_F(ConfigLoadTest, Defaults) {
    Config c;
    ASSERT_EQ(c.load(nullptr), RDMX_OK);
    EXPECT_EQ(c.device, "");
    EXPECT_EQ(c.ifaddr, "");
    EXPECT_EQ(c.eager_limit, 8192u);
    EXPECT_EQ(c.rndv_thresh, 8193u);
    EXPECT_EQ(c.srq_depth, 512u);
    EXPECT_EQ(c.unexpected_limit, size_t{64} << 20);
    EXPECT_EQ(c.progress, RDMX_PROGRESS_THREAD);
    EXPECT_EQ(c.log_level, 1);
    EXPECT_DOUBLE_EQ(c.connect_timeout, 60.0);
    EXPECT_DOUBLE_EQ(c.peer_timeout, 30.0);
    EXPECT_EQ(c.spin_us, Config::kSpinAuto) << "auto: resolved at bring-up by how crowded the host is";
    EXPECT_EQ(entry(c, "RDMX_SPIN_US")->value, "auto");
    EXPECT_EQ(c.allgather, nullptr);
    EXPECT_EQ(c.rank, -1);
    EXPECT_EQ(c.size, -1);
    ASSERT_EQ(c.entries.size(), std::size(kVars));
    for (const char *v : kVars) {
        const auto *e = entry(c, v);
        ASSERT_NE(e, nullptr) << v;
        EXPECT_EQ(e->source, ConfigSource::kDefault) << v;
        EXPECT_NE(e->doc, nullptr);
        EXPECT_FALSE(e->value.empty()) << v;
    }
    EXPECT_EQ(entry(c, "RDMX_EAGER_LIMIT")->value, "8192");
    EXPECT_EQ(entry(c, "RDMX_DEVICE")->value, "(auto)");
    EXPECT_EQ(entry(c, "RDMX_PROGRESS")->value, "thread");
    EXPECT_EQ(entry(c, "RDMX_LOG_FILE")->value, "stderr");
    EXPECT_TRUE(c.log_file.empty());

    // A config from rdmx_config_init with nothing set is the same as NULL.
    rdmx_config_t cfg;
    rdmx_config_init(&cfg);
    Config d;
    ASSERT_EQ(d.load(&cfg), RDMX_OK);
    EXPECT_EQ(d.eager_limit, 8192u);
    EXPECT_EQ(d.log_level, 1);
    for (const auto &e : d.entries) EXPECT_EQ(e.source, ConfigSource::kDefault) << e.env;
}

TEST_F(ConfigLoadTest, EnvironmentOverridesDefaults) {
    setenv("RDMX_EAGER_LIMIT", "4k", 1);
    setenv("RDMX_SRQ_DEPTH", "1k", 1);
    setenv("RDMX_UNEXPECTED_LIMIT", "1g", 1);
    setenv("RDMX_PROGRESS", "caller", 1);
    setenv("RDMX_LOG_LEVEL", "0", 1);
    setenv("RDMX_CONNECT_TIMEOUT", "2.5", 1);
    setenv("RDMX_PEER_TIMEOUT", "7", 1);
    setenv("RDMX_SPIN_US", "0", 1);
    setenv("RDMX_DEVICE", "mlx5_0:1", 1);
    setenv("RDMX_IFADDR", "10.0.0.1", 1);
    Config c;
    ASSERT_EQ(c.load(nullptr), RDMX_OK);
    EXPECT_EQ(c.eager_limit, 4096u);
    EXPECT_EQ(c.rndv_thresh, 4097u) << "the threshold follows the eager limit";
    EXPECT_EQ(c.srq_depth, 1024u);
    EXPECT_EQ(c.unexpected_limit, size_t{1} << 30);
    EXPECT_EQ(c.progress, RDMX_PROGRESS_CALLER);
    EXPECT_EQ(c.log_level, 0);
    EXPECT_DOUBLE_EQ(c.connect_timeout, 2.5);
    EXPECT_DOUBLE_EQ(c.peer_timeout, 7.0);
    EXPECT_EQ(c.spin_us, 0u);
    EXPECT_EQ(c.device, "mlx5_0:1");
    EXPECT_EQ(c.ifaddr, "10.0.0.1");
    for (const char *v : {"RDMX_EAGER_LIMIT", "RDMX_SRQ_DEPTH", "RDMX_UNEXPECTED_LIMIT", "RDMX_PROGRESS",
                          "RDMX_LOG_LEVEL", "RDMX_CONNECT_TIMEOUT", "RDMX_PEER_TIMEOUT", "RDMX_SPIN_US",
                          "RDMX_DEVICE", "RDMX_IFADDR"})
        EXPECT_EQ(entry(c, v)->source, ConfigSource::kEnvironment) << v;
    EXPECT_EQ(entry(c, "RDMX_RNDV_THRESH")->source, ConfigSource::kDefault);
    EXPECT_EQ(entry(c, "RDMX_EAGER_LIMIT")->value, "4096");
    EXPECT_EQ(entry(c, "RDMX_PROGRESS")->value, "caller");
    EXPECT_EQ(entry(c, "RDMX_DEVICE")->value, "mlx5_0:1");
    EXPECT_EQ(rdmx::g_log_level.load(), 0) << "load applies the log level";
}

TEST_F(ConfigLoadTest, EmptyEnvironmentValueCountsAsUnset) {
    setenv("RDMX_EAGER_LIMIT", "", 1);
    setenv("RDMX_PROGRESS", "", 1);
    Config c;
    ASSERT_EQ(c.load(nullptr), RDMX_OK);
    EXPECT_EQ(c.eager_limit, 8192u);
    EXPECT_EQ(entry(c, "RDMX_EAGER_LIMIT")->source, ConfigSource::kDefault);
}

// RDMX_SPIN_US: "auto" is the default spelled out; a value set is kept, and
// RDMX_SPIN_MAX_US below it fixes the spin there. auto leaves the maximum
// alone (the floor is chosen at bring-up).
TEST_F(ConfigLoadTest, SpinAutoAndSet) {
    setenv("RDMX_SPIN_US", "auto", 1);
    setenv("RDMX_SPIN_MAX_US", "1", 1);
    Config a;
    ASSERT_EQ(a.load(nullptr), RDMX_OK);
    EXPECT_EQ(a.spin_us, Config::kSpinAuto);
    EXPECT_EQ(a.spin_max_us, 1u);
    EXPECT_EQ(entry(a, "RDMX_SPIN_US")->source, ConfigSource::kEnvironment);
    setenv("RDMX_SPIN_US", "300", 1);
    Config s;
    ASSERT_EQ(s.load(nullptr), RDMX_OK);
    EXPECT_EQ(s.spin_us, 300u);
    EXPECT_EQ(s.spin_max_us, 300u) << "a maximum below the floor is a fixed spin";
    EXPECT_EQ(entry(s, "RDMX_SPIN_US")->value, "300");
}

TEST_F(ConfigLoadTest, StructBeatsEnvironment) {
    setenv("RDMX_EAGER_LIMIT", "4k", 1);
    setenv("RDMX_DEVICE", "from_env", 1);
    setenv("RDMX_PROGRESS", "caller", 1);
    setenv("RDMX_LOG_LEVEL", "3", 1);
    setenv("RDMX_PEER_TIMEOUT", "9", 1);
    setenv("RDMX_SRQ_DEPTH", "128", 1);
    rdmx_config_t cfg;
    rdmx_config_init(&cfg);
    cfg.eager_limit = 16384;
    cfg.device = "from_struct";
    cfg.progress = RDMX_PROGRESS_THREAD;
    cfg.log_level = 0;
    cfg.peer_timeout = 1.5;
    Config c;
    ASSERT_EQ(c.load(&cfg), RDMX_OK);
    EXPECT_EQ(c.eager_limit, 16384u);
    EXPECT_EQ(c.rndv_thresh, 16385u);
    EXPECT_EQ(c.device, "from_struct");
    EXPECT_EQ(c.progress, RDMX_PROGRESS_THREAD);
    EXPECT_EQ(c.log_level, 0);
    EXPECT_DOUBLE_EQ(c.peer_timeout, 1.5);
    EXPECT_EQ(c.srq_depth, 128u) << "a field left unset in the struct still comes from the environment";
    for (const char *v : {"RDMX_EAGER_LIMIT", "RDMX_DEVICE", "RDMX_PROGRESS", "RDMX_LOG_LEVEL", "RDMX_PEER_TIMEOUT"})
        EXPECT_EQ(entry(c, v)->source, ConfigSource::kConfigStruct) << v;
    EXPECT_EQ(entry(c, "RDMX_SRQ_DEPTH")->source, ConfigSource::kEnvironment);
    EXPECT_EQ(entry(c, "RDMX_CONNECT_TIMEOUT")->source, ConfigSource::kDefault);
    EXPECT_EQ(entry(c, "RDMX_DEVICE")->value, "from_struct");
}

TEST_F(ConfigLoadTest, ReloadReplacesEntries) {
    Config c;
    ASSERT_EQ(c.load(nullptr), RDMX_OK);
    setenv("RDMX_EAGER_LIMIT", "1k", 1);
    ASSERT_EQ(c.load(nullptr), RDMX_OK);
    EXPECT_EQ(c.entries.size(), std::size(kVars));
    EXPECT_EQ(c.eager_limit, 1024u);
    EXPECT_EQ(entry(c, "RDMX_EAGER_LIMIT")->source, ConfigSource::kEnvironment);
}

TEST_F(ConfigLoadTest, BadEnvironmentValuesAreInvalid) {
    const std::pair<const char *, const char *> bad[] = {
        {"RDMX_EAGER_LIMIT", "lots"},     {"RDMX_EAGER_LIMIT", "-1"},       {"RDMX_RNDV_THRESH", "8q"},
        {"RDMX_SRQ_DEPTH", "8g"},         {"RDMX_SRQ_DEPTH", "x"},          {"RDMX_UNEXPECTED_LIMIT", "1z"},
        {"RDMX_PROGRESS", "fast"},        {"RDMX_PROGRESS", "THREAD"},      {"RDMX_LOG_LEVEL", "5"},
        {"RDMX_LOG_LEVEL", "-1"},         {"RDMX_LOG_LEVEL", "debug"},      {"RDMX_CONNECT_TIMEOUT", "0"},
        {"RDMX_CONNECT_TIMEOUT", "-3"},   {"RDMX_CONNECT_TIMEOUT", "soon"}, {"RDMX_PEER_TIMEOUT", "1s"},
        {"RDMX_PEER_TIMEOUT", "nan"},     {"RDMX_SPIN_US", "-1"},           {"RDMX_SPIN_US", "5000000000"},
        {"RDMX_SPIN_US", "4294967295"},   {"RDMX_SPIN_US", "AUTO"},
        {"RDMX_BOOTSTRAP", "pmi3"},       {"RDMX_BOOTSTRAP", "PMIX"},
    };
    for (auto [var, val] : bad) {
        setenv(var, val, 1);
        Config c;
        EXPECT_EQ(c.load(nullptr), RDMX_ERR_INVALID_ARG) << var << "=" << val;
        unsetenv(var);
    }
    Config ok;
    EXPECT_EQ(ok.load(nullptr), RDMX_OK) << "the environment is clean again";
}

TEST_F(ConfigLoadTest, EagerLimitRange) {
    for (const char *v : {"63", "0", "2M", "1025k"}) {
        setenv("RDMX_EAGER_LIMIT", v, 1);
        Config c;
        EXPECT_EQ(c.load(nullptr), RDMX_ERR_INVALID_ARG) << v;
    }
    for (const char *v : {"64", "1M", "1024k"}) {
        setenv("RDMX_EAGER_LIMIT", v, 1);
        Config c;
        EXPECT_EQ(c.load(nullptr), RDMX_OK) << v;
    }
    unsetenv("RDMX_EAGER_LIMIT");
    rdmx_config_t cfg;
    rdmx_config_init(&cfg);
    cfg.eager_limit = 32;
    Config c;
    EXPECT_EQ(c.load(&cfg), RDMX_ERR_INVALID_ARG);
}

TEST_F(ConfigLoadTest, RendezvousThresholdClampedAndSrqDepthFloored) {
    setenv("RDMX_RNDV_THRESH", "1M", 1);
    setenv("RDMX_SRQ_DEPTH", "3", 1);
    Config c;
    ASSERT_EQ(c.load(nullptr), RDMX_OK);
    EXPECT_EQ(c.rndv_thresh, 8193u) << "never above eager limit + 1";
    EXPECT_EQ(c.srq_depth, 16u);
    setenv("RDMX_RNDV_THRESH", "1024", 1);
    ASSERT_EQ(c.load(nullptr), RDMX_OK);
    EXPECT_EQ(c.rndv_thresh, 1024u) << "a lower threshold is kept";
}

// A threshold of 0 would send zero-length messages by rendezvous: an RTS
// without data, which every peer rejects as malformed.
TEST_F(ConfigLoadTest, RendezvousThresholdZeroIsInvalid) {
    setenv("RDMX_RNDV_THRESH", "0", 1);
    Config c;
    EXPECT_EQ(c.load(nullptr), RDMX_ERR_INVALID_ARG);
    setenv("RDMX_RNDV_THRESH", "1", 1);
    Config one;
    ASSERT_EQ(one.load(nullptr), RDMX_OK);
    EXPECT_EQ(one.rndv_thresh, 1u) << "the smallest threshold allowed";
    unsetenv("RDMX_RNDV_THRESH");
}

int fake_allgather(const void *, void *, size_t, void *) { return 0; }

TEST_F(ConfigLoadTest, AllgatherNeedsValidRankAndSize) {
    const std::pair<int, int> bad[] = {{-1, 2}, {2, 2}, {3, 2}, {0, 0}, {0, -1}, {-1, -1}};
    for (auto [rank, size] : bad) {
        rdmx_config_t cfg;
        rdmx_config_init(&cfg);
        cfg.allgather = fake_allgather;
        cfg.rank = rank;
        cfg.size = size;
        Config c;
        EXPECT_EQ(c.load(&cfg), RDMX_ERR_INVALID_ARG) << rank << "/" << size;
    }
    int arg = 0;
    rdmx_config_t cfg;
    rdmx_config_init(&cfg);
    cfg.allgather = fake_allgather;
    cfg.allgather_arg = &arg;
    cfg.rank = 1;
    cfg.size = 4;
    Config c;
    ASSERT_EQ(c.load(&cfg), RDMX_OK);
    EXPECT_EQ(c.allgather, &fake_allgather);
    EXPECT_EQ(c.allgather_arg, &arg);
    EXPECT_EQ(c.rank, 1);
    EXPECT_EQ(c.size, 4);
    // rank/size without a callback are ignored.
    rdmx_config_init(&cfg);
    cfg.rank = 9;
    cfg.size = 2;
    Config d;
    ASSERT_EQ(d.load(&cfg), RDMX_OK);
    EXPECT_EQ(d.rank, -1);
    EXPECT_EQ(d.allgather, nullptr);
}

TEST(ConfigInit, SetsStructSizeAndUnsetValues) {
    rdmx_config_t cfg;
    std::memset(&cfg, 0x5a, sizeof(cfg));
    rdmx_config_init(&cfg);
    EXPECT_EQ(cfg.struct_size, sizeof(rdmx_config_t));
    EXPECT_EQ(cfg.log_level, -1);
    EXPECT_EQ(cfg.allgather, nullptr);
    EXPECT_EQ(cfg.device, nullptr);
    EXPECT_EQ(cfg.eager_limit, 0u);
    EXPECT_EQ(cfg.progress, RDMX_PROGRESS_DEFAULT);
    EXPECT_EQ(cfg.connect_timeout, 0.0);
    rdmx_config_init(nullptr);  // tolerated
}

TEST(ConfigSourceName, Distinct) {
    std::set<std::string> n{rdmx::config_source_name(ConfigSource::kDefault),
                            rdmx::config_source_name(ConfigSource::kEnvironment),
                            rdmx::config_source_name(ConfigSource::kConfigStruct)};
    EXPECT_EQ(n.size(), 3u);
    EXPECT_EQ(n.count("?"), 0u);
}

}  // namespace

TEST_F(ConfigLoadTest, RendezvousTuningIsValidated) {
    setenv("RDMX_RNDV_READS", "4", 1);
    setenv("RDMX_RNDV_CHUNK", "256k", 1);
    setenv("RDMX_RCACHE_MAX", "64M", 1);
    Config c;
    ASSERT_EQ(c.load(nullptr), RDMX_OK);
    EXPECT_EQ(c.rndv_reads, 4u);
    EXPECT_EQ(c.rndv_chunk, 256u << 10);
    EXPECT_EQ(c.rcache_max, 64u << 20);
    EXPECT_EQ(c.rcache, 1u);
    for (auto [var, bad] : {std::pair{"RDMX_RNDV_READS", "0"}, std::pair{"RDMX_RNDV_CHUNK", "100"},
                            std::pair{"RDMX_RCACHE", "2"}, std::pair{"RDMX_RCACHE_MAX", "lots"},
                            std::pair{"RDMX_RNDV_PROTO", "push"}}) {
        setenv(var, bad, 1);
        Config d;
        EXPECT_EQ(d.load(nullptr), RDMX_ERR_INVALID_ARG) << var << "=" << bad;
        unsetenv(var);
    }
}

TEST_F(ConfigLoadTest, SharedMemoryKnobsAreValidated) {
    Config c;
    ASSERT_EQ(c.load(nullptr), RDMX_OK);
    EXPECT_EQ(c.transports, "sm,rc,self");
    EXPECT_EQ(c.node_id, "");
    EXPECT_EQ(c.sm_cma, Config::SmCmaMode::kAuto);
    EXPECT_EQ(c.sm_cma_thresh, Config::kSmCmaThreshDefault);
    EXPECT_EQ(c.sm_slots, 64u);
    setenv("RDMX_TRANSPORTS", "rc,self", 1);
    setenv("RDMX_NODE_ID", "pretend-a", 1);
    setenv("RDMX_SM_CMA", "off", 1);
    setenv("RDMX_SM_CMA_THRESH", "2M", 1);
    setenv("RDMX_SM_SLOTS", "16", 1);
    Config d;
    ASSERT_EQ(d.load(nullptr), RDMX_OK);
    EXPECT_EQ(d.transports, "rc,self");
    EXPECT_EQ(d.node_id, "pretend-a");
    EXPECT_EQ(d.sm_cma, Config::SmCmaMode::kOff);
    EXPECT_EQ(d.sm_cma_thresh, 2u << 20);
    EXPECT_EQ(d.sm_slots, 16u);
    for (auto [var, bad] : {std::pair{"RDMX_TRANSPORTS", "sm,ud"}, std::pair{"RDMX_TRANSPORTS", "sm,sm"},
                            std::pair{"RDMX_TRANSPORTS", "sm,"}, std::pair{"RDMX_SM_CMA", "yes"},
                            std::pair{"RDMX_SM_CMA_THRESH", "big"}, std::pair{"RDMX_SM_SLOTS", "2"},
                            std::pair{"RDMX_SM_SLOTS", "8192"}, std::pair{"RDMX_SM_SLOTS", "48"}}) {
        const char *old = std::getenv(var);
        const std::string keep = old ? old : "";
        setenv(var, bad, 1);
        Config e;
        EXPECT_EQ(e.load(nullptr), RDMX_ERR_INVALID_ARG) << var << "=" << bad;
        setenv(var, keep.c_str(), 1);
    }
}

// RDMX_CONNECT: auto by default, which is mesh up to the threshold, lazy above.
TEST_F(ConfigLoadTest, ConnectModeParsesAndDecides) {
    Config c;
    ASSERT_EQ(c.load(nullptr), RDMX_OK);
    EXPECT_EQ(c.connect, Config::ConnectMode::kAuto);
    EXPECT_FALSE(c.lazy_connect(Config::kConnectAutoMeshMax));
    EXPECT_TRUE(c.lazy_connect(100000));
    setenv("RDMX_CONNECT", "mesh", 1);
    Config m;
    ASSERT_EQ(m.load(nullptr), RDMX_OK);
    EXPECT_FALSE(m.lazy_connect(100000));
    setenv("RDMX_CONNECT", "lazy", 1);
    Config l;
    ASSERT_EQ(l.load(nullptr), RDMX_OK);
    EXPECT_EQ(l.connect, Config::ConnectMode::kLazy);
    EXPECT_TRUE(l.lazy_connect(2));
    EXPECT_EQ(entry(l, "RDMX_CONNECT")->value, "lazy");
    setenv("RDMX_CONNECT", "auto", 1);
    Config a;
    ASSERT_EQ(a.load(nullptr), RDMX_OK);
    EXPECT_FALSE(a.lazy_connect(Config::kConnectAutoMeshMax));
    EXPECT_TRUE(a.lazy_connect(Config::kConnectAutoMeshMax + 1));
    for (const char *bad : {"Lazy", "full", "mesh,lazy"}) {
        setenv("RDMX_CONNECT", bad, 1);
        Config e;
        EXPECT_EQ(e.load(nullptr), RDMX_ERR_INVALID_ARG) << "RDMX_CONNECT='" << bad << "'";
    }
}

// RDMX_LAZY_PEERS: the peer count on-demand queues are planned for.
TEST_F(ConfigLoadTest, LazyPeersPlansOnDemandQueues) {
    Config c;
    ASSERT_EQ(c.load(nullptr), RDMX_OK);
    EXPECT_EQ(c.lazy_peers, rdmx::kLazyPlanPeers);
    setenv("RDMX_LAZY_PEERS", "8", 1);
    Config d;
    ASSERT_EQ(d.load(nullptr), RDMX_OK);
    EXPECT_EQ(d.lazy_peers, 8u);
    EXPECT_EQ(entry(d, "RDMX_LAZY_PEERS")->value, "8");
    for (const char *bad : {"0", "-1", "many", "2000000"}) {
        setenv("RDMX_LAZY_PEERS", bad, 1);
        Config e;
        EXPECT_EQ(e.load(nullptr), RDMX_ERR_INVALID_ARG) << "RDMX_LAZY_PEERS='" << bad << "'";
    }
    unsetenv("RDMX_LAZY_PEERS");
}

// The struct's connect and lazy_peers fields win over the environment; a
// connect value outside the enum is refused.
TEST_F(ConfigLoadTest, ConnectFieldsOfTheStruct) {
    setenv("RDMX_CONNECT", "mesh", 1);
    setenv("RDMX_LAZY_PEERS", "8", 1);
    rdmx_config_t u;
    rdmx_config_init(&u);
    u.connect = RDMX_CONNECT_LAZY;
    u.lazy_peers = 16;
    Config c;
    ASSERT_EQ(c.load(&u), RDMX_OK);
    EXPECT_EQ(c.connect, Config::ConnectMode::kLazy);
    EXPECT_EQ(c.lazy_peers, 16u);
    EXPECT_EQ(entry(c, "RDMX_CONNECT")->source, ConfigSource::kConfigStruct);
    u.connect = RDMX_CONNECT_AUTO;
    Config a;
    ASSERT_EQ(a.load(&u), RDMX_OK);
    EXPECT_EQ(a.connect, Config::ConnectMode::kAuto);
    rdmx_config_init(&u);  // unset: the environment's
    Config e;
    ASSERT_EQ(e.load(&u), RDMX_OK);
    EXPECT_EQ(e.connect, Config::ConnectMode::kMesh);  // RDMX_CONNECT=mesh above
    EXPECT_EQ(e.lazy_peers, 8u);
    int bad = 7;
    std::memcpy(&u.connect, &bad, sizeof(bad));
    Config b;
    EXPECT_EQ(b.load(&u), RDMX_ERR_INVALID_ARG);
}

TEST_F(ConfigLoadTest, UnexpectedMaxIsABoundOnEntries) {
    Config c;
    ASSERT_EQ(c.load(nullptr), RDMX_OK);
    EXPECT_EQ(c.unexpected_max, 65536u);
    setenv("RDMX_UNEXPECTED_MAX", "1k", 1);
    Config d;
    ASSERT_EQ(d.load(nullptr), RDMX_OK);
    EXPECT_EQ(d.unexpected_max, 1024u);
    setenv("RDMX_UNEXPECTED_MAX", "0", 1);
    Config e;
    EXPECT_EQ(e.load(nullptr), RDMX_ERR_INVALID_ARG);
}

// Every credit promised has a receive buffer behind it within what the
// device gives (the old sizing promised 8 credits to each of 200 peers, 1,816
// buffers, and the SRQ was then clamped to 999), and the CQ holds every
// receive and send that can be outstanding; a job the device cannot hold
// names the limit instead.
TEST(PlanQueues, CreditsFitTheDeviceLimits) {
    using rdmx::plan_queues;
    for (uint32_t npeers : {1u, 7u, 63u, 200u, 1000u, 5000u})
        for (uint32_t max_srq : {0u, 1000u, 16384u, 1u << 20})
            for (uint32_t max_cqe : {0u, 32767u, 4u << 20}) {
                rdmx::QueuePlan q = plan_queues(npeers, 512, 64, max_srq, max_cqe, 16384);
                SCOPED_TRACE(testing::Message() << npeers << " peers, max_srq_wr " << max_srq << ", max_cqe "
                                                << max_cqe);
                if (q.limit != nullptr) {
                    EXPECT_GT(q.need, 0u);
                    continue;
                }
                EXPECT_GE(q.credits, rdmx::kMinCredits);
                EXPECT_LE(q.credits, 64u);
                EXPECT_GE(uint64_t{q.srq_depth}, uint64_t{q.credits} * npeers + 16 + npeers);
                if (max_srq != 0) {
                    EXPECT_LE(q.srq_depth, max_srq - 1);
                }
                EXPECT_GE(q.sq_depth, rdmx::kMinSqDepth);
                EXPECT_EQ(q.sq_depth & (q.sq_depth - 1), 0u);
                EXPECT_EQ(uint64_t{q.cqe}, uint64_t{q.srq_depth} + uint64_t{npeers} * q.sq_depth + 64);
                if (max_cqe != 0) {
                    EXPECT_LE(q.cqe, max_cqe);
                }
            }
    rdmx::QueuePlan q = plan_queues(200, 512, 64, 1000, 0, 0);
    ASSERT_EQ(q.limit, nullptr);
    EXPECT_EQ(q.credits, 3u);  // (999 - 216) / 200
    EXPECT_STREQ(plan_queues(1000, 512, 64, 1000, 0, 0).limit, "max_srq_wr");
    EXPECT_STREQ(plan_queues(1000, 512, 64, 0, 32767, 0).limit, "max_cqe");
    q = plan_queues(7, 512, 64, 0, 0, 0);  // no limits: as before (64 credits, SRQ 512, 128-deep SQs)
    EXPECT_EQ(q.credits, 64u);
    EXPECT_EQ(q.srq_depth, 512u);
    EXPECT_EQ(q.sq_depth, 128u);
}

namespace rdmx {
namespace {

using test::count_of;

// A misspelt variable would silently do nothing: warned once per process,
// with the closest real name; other layers' and tools' variables are not.
TEST_F(ConfigLoadTest, UnknownVariableIsWarnedOnceWithASuggestion) {
    setenv("RDMX_EAGER_LIMT", "4k", 1);
    setenv("RDMX_ZZZ_NOTHING_LIKE_IT", "1", 1);
    setenv("RDMX_COLL_BCAST_ALGO", "binomial", 1);
    setenv("RDMX_TEST_SHRINK", "10", 1);
    testing::internal::CaptureStderr();
    Config c;
    ASSERT_EQ(c.load(nullptr), RDMX_OK);
    ASSERT_EQ(c.load(nullptr), RDMX_OK);
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(count_of(err, "RDMX_EAGER_LIMT is not an rdmx variable"), 1u) << err;
    EXPECT_EQ(count_of(err, "did you mean RDMX_EAGER_LIMIT?"), 1u) << err;
    EXPECT_EQ(count_of(err, "RDMX_ZZZ_NOTHING_LIKE_IT is not an rdmx variable and is ignored (rdmx-info"), 1u) << err;
    EXPECT_EQ(count_of(err, "RDMX_COLL_BCAST_ALGO"), 0u) << err;
    EXPECT_EQ(count_of(err, "RDMX_TEST_SHRINK"), 0u) << err;
    EXPECT_EQ(c.eager_limit, 8192u);  // the misspelt value did not apply
    for (const char *v : {"RDMX_EAGER_LIMT", "RDMX_ZZZ_NOTHING_LIKE_IT", "RDMX_COLL_BCAST_ALGO", "RDMX_TEST_SHRINK"})
        unsetenv(v);
}

// RDMX_LOG_FILE through Config::load: the lines go to the file; a load
// without it sends them back to stderr.
TEST_F(ConfigLoadTest, LogFileFromTheEnvironment) {
    char dir[] = "/tmp/rdmx_config_log.XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    const std::string path = std::string(dir) + "/cfg-" + std::to_string(getpid()) + ".log";
    setenv("RDMX_LOG_FILE", (std::string(dir) + "/cfg-%p.log").c_str(), 1);
    Config c;
    ASSERT_EQ(c.load(nullptr), RDMX_OK);
    EXPECT_EQ(entry(c, "RDMX_LOG_FILE")->source, ConfigSource::kEnvironment);
    RDMX_WARN("config test: into the file");
    unsetenv("RDMX_LOG_FILE");
    testing::internal::CaptureStderr();
    Config d;  // a later rdmx_init's configuration
    ASSERT_EQ(d.load(nullptr), RDMX_OK);
    RDMX_WARN("config test: on stderr");
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(count_of(err, "config test: on stderr"), 1u) << err;
    std::ifstream f(path);
    std::stringstream file;
    file << f.rdbuf();
    EXPECT_EQ(count_of(file.str(), "WARN: config test: into the file\n"), 1u) << file.str();
    EXPECT_EQ(count_of(file.str(), "on stderr"), 0u) << file.str();
    std::remove(path.c_str());
    rmdir(dir);
}

}  // namespace
}  // namespace rdmx
