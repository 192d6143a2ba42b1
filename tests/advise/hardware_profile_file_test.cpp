// Hardware profile files: a regular file of at most 1 MiB (a FIFO is refused without
// blocking), and every field of the wrong type is a ConfigError naming the file, never a
// bare JSON exception.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "advise/hardware_profile.h"
#include "peak_memory.h"
#include "test_util.h"

namespace tandem::detail {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

json shipped_profile(const std::string& name) {
  std::ifstream in(profiles_directory() + "/" + name + ".json");
  return json::parse(in);
}

std::string write_profile(const test::TempDir& dir, const json& j) {
  const std::string path = dir.file("profile.json");
  std::ofstream(path) << j.dump();
  return path;
}

// Edits of the array at `pointer` in `j`, each with a piece of the error it must raise.
using BrokenArrays = std::vector<std::pair<std::function<void(json&)>, std::string>>;

// Each edit of `j` at `pointer` is refused by the loader with a ConfigError that names the
// file, `field` and the edit's message.
void expect_each_refused(const test::TempDir& dir, const json& j, const std::string& pointer,
                         const std::string& field, const BrokenArrays& broken) {
  for (const auto& [edit, message] : broken) {
    json bad = j;
    edit(bad[json::json_pointer(pointer)]);
    const std::string path = write_profile(dir, bad);
    test::expect_error<ConfigError>([&] { load_hardware_profile(path); }, {path, field, message});
  }
}

TEST(HardwareProfileFile, FifoIsRefusedWithoutBlocking) {
  test::TempDir dir;
  const std::string fifo = dir.file("fifo.json");
  test::expect_fifo_refused(fifo, [&] { load_hardware_profile(fifo); });
}

TEST(HardwareProfileFile, OversizedFileIsRefusedBeforeReading) {
  test::TempDir dir;
  const std::string path = dir.file("big.json");
  std::ofstream(path) << std::string(2 << 20, ' ') << "{}";
  test::expect_error<IoError>([&] { load_hardware_profile(path); }, {path, "more than"});
}

TEST(HardwareProfileFile, WrongTypesAreConfigErrorsNamingTheFile) {
  test::TempDir dir;
  const std::vector<std::function<void(json&)>> edits = {
      [](json& j) { j["name"] = 3; },
      [](json& j) { j["description"] = json::array(); },
      [](json& j) { j["device"]["name"] = false; },
      [](json& j) { j["device"]["comm_uses_compute"] = "yes"; },
      [](json& j) {
        j["device"]["calibration"]["widths"] = {784, 1e300};
      },
      [](json& j) {
        j["device"]["calibration"]["widths"] = {784, -10};
      },
      [](json& j) { j["device"]["calibration"]["batch"] = 1.5; },
      [](json& j) { j["device"]["calibration"]["epochs"] = 1e300; },
      [](json& j) { j["device"]["calibration"]["update_passes"] = "five"; },
      [](json& j) { j["device"]["calibration"] = 7; },
  };
  for (size_t i = 0; i < edits.size(); ++i) {
    json j = shipped_profile("this-machine-cpu");
    edits[i](j);
    const std::string path = write_profile(dir, j);
    try {
      load_hardware_profile(path);
      ADD_FAILURE() << "edit " << i << " was accepted";
    } catch (const ConfigError& e) {
      EXPECT_THAT(e.what(), HasSubstr(path)) << "edit " << i;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "edit " << i << " threw another type: " << e.what();
    }
  }
}

// device.bf16_loops: the bf16 loops' seconds per float at ascending buffer sizes; each
// malformed entry is refused naming the field.
TEST(HardwareProfileFile, Bf16LoopsAreReadAndCheckedAscending) {
  test::TempDir dir;
  json j = shipped_profile("this-machine-cpu");
  j["device"]["bf16_loops"] = {
      {{"floats", 65536}, {"pack", 1e-10}, {"unpack", 2e-10}, {"sum", 3e-10}},
      {{"floats", 1 << 24}, {"pack", 2e-9}, {"unpack", 1e-9}, {"sum", 1e-9}}};
  const HardwareProfile hw = load_hardware_profile(write_profile(dir, j));
  ASSERT_EQ(hw.device.bf16_loops.size(), 2u);
  EXPECT_EQ(hw.device.bf16_loops[1].floats, 1 << 24);
  EXPECT_DOUBLE_EQ(hw.device.bf16_loops[0].unpack, 2e-10);
  EXPECT_DOUBLE_EQ(hw.device.bf16_loops[0].sum, 3e-10);
  expect_each_refused(dir, j, "/device/bf16_loops", "bf16_loops",
                      {
                          {[](json& l) { l = 3; }, "bf16_loops must be an array"},
                          {[](json& l) { l[0].erase("floats"); }, "needs 'floats'"},
                          {[](json& l) { l[0]["floats"] = 0; }, "needs 'floats'"},
                          {[](json& l) { l[1]["floats"] = 65536; },
                           "must ascend in 'floats', got 65536 after 65536"},
                          {[](json& l) { l[1]["pack"] = -1e-9; }, "pack"},
                          {[](json& l) { l[0].erase("sum"); }, "sum"},
                      });
}

// The all-reduce sweep between ranks (measurements.allreduce_sweep and the ranks it ran on,
// as calibrate writes them) is the rank_rank link's measurements alone: read back; malformed
// ones refused; without a rank_rank link, or without its ranks, it is not read.
TEST(HardwareProfileFile, AllreduceSweepIsReadWithTheRankLink) {
  test::TempDir dir;
  json j = shipped_profile("this-machine-cpu");
  j["measurements"]["allreduce_sweep"] = {
      {{"floats", 1024}, {"seconds", 6e-6}, {"bf16_seconds", 7e-6}},
      {{"floats", 1 << 24}, {"seconds", 3e-2}, {"bf16_seconds", 3.3e-2}}};
  j["measurements"]["allreduce_sweep_ranks"] = 2;
  EXPECT_TRUE(load_hardware_profile(write_profile(dir, j)).rank_rank.alone.empty());
  j["rank_rank"] = {{"bandwidth", 1.8e9}, {"latency", 3e-6}};
  json older = j;
  older["measurements"].erase("allreduce_sweep_ranks");
  EXPECT_TRUE(load_hardware_profile(write_profile(dir, older)).rank_rank.alone.empty());
  const HardwareProfile hw = load_hardware_profile(write_profile(dir, j));
  EXPECT_EQ(hw.rank_rank.alone_ranks, 2);
  ASSERT_EQ(hw.rank_rank.alone.size(), 2u);
  EXPECT_EQ(hw.rank_rank.alone[1].floats, 1 << 24);
  EXPECT_DOUBLE_EQ(hw.rank_rank.alone[0].seconds, 6e-6);
  EXPECT_DOUBLE_EQ(hw.rank_rank.alone[1].bf16_seconds, 3.3e-2);
  expect_each_refused(
      dir, j, "/measurements/allreduce_sweep", "allreduce_sweep",
      {
          {[](json& l) { l = "fast"; }, "allreduce_sweep must be an array"},
          {[](json& l) { l[0].erase("floats"); }, "needs 'floats'"},
          {[](json& l) { l[1]["floats"] = 1024; }, "must ascend in 'floats', got 1024 after 1024"},
          {[](json& l) { l[0]["seconds"] = 0; }, "seconds"},
          {[](json& l) { l[1].erase("bf16_seconds"); }, "bf16_seconds"},
          {[](json& l) { l[0] = 7; }, "needs 'floats'"},
          {[](json& l) { l[0]["seconds"] = "fast"; }, "seconds"},
      });
  expect_each_refused(dir, j, "/measurements", "measurements",
                      {
                          {[](json& m) { m = json::array(); }, "must be an object"},
                          {[](json& m) { m["allreduce_sweep_ranks"] = 1; }, "must be >= 2"},
                          {[](json& m) { m["allreduce_sweep_ranks"] = "two"; }, "whole number"},
                      });
}

// Deterministic mode's measurements: the sweep's exchange times (back to back and cold, on
// every size or none), the cold copy and sum rates (both or neither) and the core's cache
// size; read back, absent in older profiles, malformed ones refused naming the file and the
// field.
TEST(HardwareProfileFile, DeterministicExchangeMeasurementsAreReadAndChecked) {
  test::TempDir dir;
  json j = shipped_profile("this-machine-cpu");
  j["rank_rank"] = {{"bandwidth", 1.8e9}, {"latency", 3e-6}};
  j["measurements"]["allreduce_sweep_ranks"] = 2;
  j["measurements"]["allreduce_sweep"] = {{{"floats", 1024},
                                           {"seconds", 6e-6},
                                           {"bf16_seconds", 7e-6},
                                           {"deterministic_seconds", 5e-6},
                                           {"deterministic_cold_seconds", 9e-6}},
                                          {{"floats", 1 << 24},
                                           {"seconds", 3e-2},
                                           {"bf16_seconds", 3.3e-2},
                                           {"deterministic_seconds", 3.5e-2},
                                           {"deterministic_cold_seconds", 4e-2}}};
  j["device"]["cold_copy_bandwidth"] = 7e9;
  j["device"]["cold_sum_bandwidth"] = 2e10;
  j["device"]["private_cache_bytes"] = 2 << 20;
  const HardwareProfile hw = load_hardware_profile(write_profile(dir, j));
  ASSERT_EQ(hw.rank_rank.alone.size(), 2u);
  EXPECT_DOUBLE_EQ(hw.rank_rank.alone[0].deterministic_seconds, 5e-6);
  EXPECT_DOUBLE_EQ(hw.rank_rank.alone[1].deterministic_cold_seconds, 4e-2);
  EXPECT_DOUBLE_EQ(hw.device.cold_copy_bandwidth, 7e9);
  EXPECT_DOUBLE_EQ(hw.device.cold_sum_bandwidth, 2e10);
  EXPECT_EQ(hw.device.private_cache_bytes, 2 << 20);
  const HardwareProfile shipped =
      load_hardware_profile(write_profile(dir, shipped_profile("this-machine-cpu")));
  EXPECT_EQ(shipped.device.cold_copy_bandwidth, 0);
  EXPECT_EQ(shipped.device.private_cache_bytes, 0);
  expect_each_refused(
      dir, j, "/measurements/allreduce_sweep", "allreduce_sweep",
      {
          {[](json& l) { l[0]["deterministic_seconds"] = 0; }, "deterministic_seconds"},
          {[](json& l) { l[1].erase("deterministic_cold_seconds"); }, "deterministic_cold_seconds"},
          {[](json& l) { l[0]["deterministic_cold_seconds"] = "slow"; },
           "deterministic_cold_seconds"},
          {[](json& l) {
             l[1].erase("deterministic_seconds");
             l[1].erase("deterministic_cold_seconds");
           },
           "must be on every entry or on none"},
      });
  expect_each_refused(dir, j, "/device", "device",
                      {
                          {[](json& d) { d.erase("cold_sum_bandwidth"); }, "cold_sum_bandwidth"},
                          {[](json& d) { d["cold_copy_bandwidth"] = -1; }, "cold_copy_bandwidth"},
                          {[](json& d) { d["private_cache_bytes"] = 0; }, "private_cache_bytes"},
                      });
}

// device.shared_cache_bytes, update_contention and update_contention_devices: read back as
// written; absent in older profiles; malformed ones refused naming the field.
TEST(HardwareProfileFile, SharedCacheAndUpdateContentionAreReadAndChecked) {
  test::TempDir dir;
  json j = shipped_profile("this-machine-cpu");
  j["device"]["shared_cache_bytes"] = 32 << 20;
  j["device"]["update_contention"] = {{{"bytes", 262144}, {"own", 1.05}, {"shard", 3.0}},
                                      {{"bytes", 67108864}, {"own", 1.7}, {"shard", 1.6}}};
  j["device"]["update_contention_devices"] = 2;
  const HardwareProfile hw = load_hardware_profile(write_profile(dir, j));
  EXPECT_EQ(hw.device.shared_cache_bytes, 32 << 20);
  ASSERT_EQ(hw.device.update_contention.size(), 2u);
  EXPECT_EQ(hw.device.update_contention_devices, 2);
  EXPECT_EQ(hw.device.update_contention[0].bytes, 262144);
  EXPECT_DOUBLE_EQ(hw.device.update_contention[0].own, 1.05);
  EXPECT_DOUBLE_EQ(hw.device.update_contention[0].shard, 3.0);
  EXPECT_EQ(hw.device.update_contention[1].bytes, 67108864);
  EXPECT_DOUBLE_EQ(hw.device.update_contention[1].own, 1.7);
  EXPECT_DOUBLE_EQ(hw.device.update_contention[1].shard, 1.6);
  const HardwareProfile shipped =
      load_hardware_profile(write_profile(dir, shipped_profile("this-machine-cpu")));
  EXPECT_EQ(shipped.device.shared_cache_bytes, 0);
  EXPECT_TRUE(shipped.device.update_contention.empty());
  expect_each_refused(dir, j, "/device/update_contention", "update_contention",
                      {
                          {[](json& c) { c = json::array(); }, "must be a non-empty array"},
                          {[](json& c) { c = 3; }, "must be a non-empty array"},
                          {[](json& c) { c[1]["bytes"] = 262144; }, "must ascend in 'bytes'"},
                          {[](json& c) { c[0].erase("bytes"); }, "needs 'bytes'"},
                          {[](json& c) { c[0]["own"] = 0; }, "'own' must be > 0"},
                          {[](json& c) { c[1].erase("shard"); }, "missing number 'shard'"},
                      });
  expect_each_refused(dir, j, "/device", "update_contention_devices",
                      {
                          {[](json& d) { d.erase("update_contention_devices"); }, "needs"},
                          {[](json& d) { d["update_contention_devices"] = 1; }, "2 or more"},
                          {[](json& d) { d["update_contention_devices"] = 2.5; }, "whole number"},
                      });
  expect_each_refused(dir, j, "/device", "shared_cache_bytes",
                      {
                          {[](json& d) { d["shared_cache_bytes"] = 0; }, "must be > 0"},
                          {[](json& d) { d["shared_cache_bytes"] = "32M"; }, "missing number"},
                      });
}

// Where the probes of devices at once ran (profiles since 2026-12-07, evening): the update's
// window beside update_contention and the steps at once's in their weight_grad_gemms entry,
// read back as written; absent in older profiles; malformed ones, or one without the timings
// it describes, refused naming the field.
TEST(HardwareProfileFile, ProbeWindowsAreReadAndChecked) {
  test::TempDir dir;
  json j = shipped_profile("this-machine-cpu");
  j["device"]["update_contention"] = {{{"bytes", 262144}, {"own", 1.05}, {"shard", 3.0}}};
  j["device"]["update_contention_devices"] = 2;
  const json window = {{"kept", 7},     {"redone", 2},           {"handoff", 40e-9},
                       {"steal", 0.01}, {"best_handoff", 25e-9}, {"waits", 12},
                       {"cache", 6e-6}, {"best_cache", 5e-6},    {"crowded", 3}};
  j["device"]["update_contention_window"] = window;
  const json times = {{"forward_alone", 1e-3},
                      {"backward_alone", 2e-3},
                      {"forward_shared", 1e-3},
                      {"backward_shared", 1e-3}};
  json at_once = times;
  at_once["rows"] = 12;
  json steps = {{"devices", 2},
                {"points",
                 {{{"rows", 12},
                   {"whole", 2e-4},
                   {"shard", 1e-4},
                   {"whole_cold", 4e-4},
                   {"shard_cold", 3e-4}}}},
                {"steps_at_once", {at_once}},
                {"window", window}};
  steps["window"]["redone"] = 0;
  steps["window"]["handoff"] = 200e-9;
  steps["window"].erase("waits");  // as profiles before the waits and the cache readings
  steps["window"].erase("cache");
  steps["window"].erase("best_cache");
  steps["window"].erase("crowded");
  j["device"]["dense_rates"] = {{{"widths", {784, 256, 10}},
                                 {"sustained_flops", 1e11},
                                 {"half_rows", 12},
                                 {"weight_grad_gemms", {steps}}}};
  const HardwareProfile hw = load_hardware_profile(write_profile(dir, j));
  const ProbeWindow& u = hw.device.update_contention_window;
  EXPECT_EQ(u.kept, 7);
  EXPECT_EQ(u.redone, 2);
  EXPECT_DOUBLE_EQ(u.handoff, 40e-9);
  EXPECT_DOUBLE_EQ(u.steal, 0.01);
  EXPECT_DOUBLE_EQ(u.best_handoff, 25e-9);
  EXPECT_FALSE(u.disturbed());
  const ProbeWindow& s = hw.device.dense_rates.at(0).weight_grad_gemms.at(0).at_once_window;
  EXPECT_EQ(s.kept, 7);
  EXPECT_EQ(s.redone, 0);
  EXPECT_EQ(u.waits, 12);
  EXPECT_EQ(s.waits, 0);
  EXPECT_DOUBLE_EQ(u.cache, 6e-6);
  EXPECT_DOUBLE_EQ(u.best_cache, 5e-6);
  EXPECT_EQ(u.crowded, 3);
  EXPECT_EQ(s.cache, 0);
  EXPECT_EQ(s.best_cache, 0);
  EXPECT_LT(s.crowded, 0);
  // Written as read; 90f01fd's readings without the count read as not counted.
  EXPECT_EQ(probe_window_json(u), window);
  json uncounted = window;
  uncounted.erase("crowded");
  EXPECT_LT(read_probe_window(uncounted, "here").crowded, 0);
  EXPECT_EQ(probe_window_json(read_probe_window(uncounted, "here")), uncounted);
  EXPECT_TRUE(s.disturbed());  // 200 ns, 8x the fastest
  // The profile's disturbed windows: the steps at once's only.
  ASSERT_EQ(disturbed_windows(hw).size(), 1u);
  const HardwareProfile shipped =
      load_hardware_profile(write_profile(dir, shipped_profile("this-machine-cpu")));
  EXPECT_FALSE(shipped.device.update_contention_window.recorded());
  EXPECT_TRUE(disturbed_windows(shipped).empty());
  const BrokenArrays broken = {
      {[](json& w) { w = 3; }, "must be an object"},
      {[](json& w) { w.erase("kept"); }, "'kept'"},
      {[](json& w) { w["kept"] = 0; }, "'kept'"},
      {[](json& w) { w["redone"] = -1; }, "'redone', a whole number from 0 to kept"},
      {[](json& w) { w["redone"] = 8; }, "'redone', a whole number from 0 to kept"},
      {[](json& w) { w["redone"] = 1.5; }, "'redone'"},
      {[](json& w) { w["handoff"] = 0; }, "'handoff' must be > 0"},
      {[](json& w) { w["best_handoff"] = 50e-9; }, "less than 'best_handoff'"},
      {[](json& w) { w.erase("steal"); }, "needs 'steal'"},
      {[](json& w) { w["steal"] = 1.5; }, "a share from 0 to 1"},
      {[](json& w) { w["steal"] = -0.1; }, "'steal'"},
      {[](json& w) { w["waits"] = -1; }, "'waits' must be a whole number from 0"},
      {[](json& w) { w["waits"] = 2.5; }, "'waits' must be a whole number from 0"},
      {[](json& w) { w["waits"] = 2000000000; }, "'waits' must be a whole number from 0"},
      {[](json& w) {
         w["redone"] = 0;
         w["waits"] = 3;
       },
       "'waits' 3 with 'redone' 0"},
      {[](json& w) { w.erase("best_cache"); }, "both 'cache' and 'best_cache' or neither"},
      {[](json& w) { w.erase("cache"); }, "both 'cache' and 'best_cache' or neither"},
      {[](json& w) { w["cache"] = 0; }, "'cache' must be > 0"},
      {[](json& w) { w["best_cache"] = -1e-6; }, "'best_cache' must be > 0"},
      {[](json& w) { w["best_cache"] = 7e-6; }, "'cache' is less than 'best_cache'"},
      {[](json& w) {
         w.erase("cache");
         w.erase("best_cache");
       },
       "'crowded' without 'cache' and 'best_cache'"},
      {[](json& w) { w["crowded"] = 8; }, "'crowded' must be a whole number from 0 to kept (7)"},
      {[](json& w) { w["crowded"] = -1; }, "'crowded' must be a whole number from 0 to kept"},
      {[](json& w) { w["crowded"] = 1.5; }, "'crowded' must be a whole number from 0 to kept"},
  };
  expect_each_refused(dir, j, "/device/update_contention_window", "update_contention: window",
                      broken);
  expect_each_refused(dir, j, "/device/dense_rates/0/weight_grad_gemms/0/window",
                      "steps_at_once: window", {broken[0], broken[3]});
  expect_each_refused(dir, j, "/device", "update_contention_window",
                      {{[](json& d) {
                          d.erase("update_contention");
                          d.erase("update_contention_devices");
                        },
                        "without 'update_contention'"}});
  expect_each_refused(dir, j, "/device/dense_rates/0/weight_grad_gemms/0", "'window' without",
                      {{[](json& w) { w.erase("steps_at_once"); }, "steps_at_once"}});
}

// device.deterministic_exchange with its devices and shards: read back as written; absent in
// older profiles; malformed ones refused naming the field.
TEST(HardwareProfileFile, TheDeterministicExchangeIsReadAndChecked) {
  test::TempDir dir;
  json j = shipped_profile("this-machine-cpu");
  j["device"]["deterministic_exchange"] = {{{"bytes", 262144}, {"copy", 7e-6}, {"tree", 1.2e-5}},
                                           {{"bytes", 4194304}, {"copy", 3e-4}, {"tree", 4.8e-4}}};
  j["device"]["deterministic_exchange_devices"] = 2;
  j["device"]["deterministic_exchange_shards"] = 2;
  const HardwareProfile hw = load_hardware_profile(write_profile(dir, j));
  ASSERT_EQ(hw.device.deterministic_exchange.size(), 2u);
  EXPECT_EQ(hw.device.deterministic_exchange_devices, 2);
  EXPECT_EQ(hw.device.deterministic_exchange_shards, 2);
  EXPECT_EQ(hw.device.deterministic_exchange[0].bytes, 262144);
  EXPECT_DOUBLE_EQ(hw.device.deterministic_exchange[0].copy, 7e-6);
  EXPECT_DOUBLE_EQ(hw.device.deterministic_exchange[0].tree, 1.2e-5);
  EXPECT_EQ(hw.device.deterministic_exchange[1].bytes, 4194304);
  EXPECT_DOUBLE_EQ(hw.device.deterministic_exchange[1].copy, 3e-4);
  EXPECT_DOUBLE_EQ(hw.device.deterministic_exchange[1].tree, 4.8e-4);
  const HardwareProfile shipped =
      load_hardware_profile(write_profile(dir, shipped_profile("this-machine-cpu")));
  EXPECT_TRUE(shipped.device.deterministic_exchange.empty());
  expect_each_refused(dir, j, "/device/deterministic_exchange", "deterministic_exchange",
                      {
                          {[](json& c) { c = json::array(); }, "must be a non-empty array"},
                          {[](json& c) { c[1]["bytes"] = 262144; }, "must ascend in 'bytes'"},
                          {[](json& c) { c[0]["copy"] = 0; }, "'copy' must be > 0"},
                          {[](json& c) { c[1].erase("tree"); }, "missing number 'tree'"},
                      });
  expect_each_refused(dir, j, "/device", "deterministic_exchange",
                      {
                          {[](json& d) { d.erase("deterministic_exchange_devices"); },
                           "needs 'deterministic_exchange_devices'"},
                          {[](json& d) { d.erase("deterministic_exchange_shards"); },
                           "needs 'deterministic_exchange_shards'"},
                          {[](json& d) { d["deterministic_exchange_devices"] = 1; }, "2 or more"},
                          {[](json& d) { d["deterministic_exchange_shards"] = 0; }, "whole number"},
                      });
}

// The host strategy's copies timed at once: read back ascending with their devices; an older
// profile has none; malformed ones refused naming the file and the field.
TEST(HardwareProfileFile, TheHostsCopiesAreReadAndChecked) {
  test::TempDir dir;
  json j = shipped_profile("this-machine-cpu");
  j["device"]["host_exchange"] = {{{"bytes", 65536}, {"copy", 4e-6}, {"sum", 3e-6}},
                                  {{"bytes", 2097152}, {"copy", 1.5e-4}, {"sum", 1e-4}}};
  j["device"]["host_exchange_devices"] = 2;
  const HardwareProfile hw = load_hardware_profile(write_profile(dir, j));
  ASSERT_EQ(hw.device.host_exchange.size(), 2u);
  EXPECT_EQ(hw.device.host_exchange_devices, 2);
  EXPECT_EQ(hw.device.host_exchange[0].bytes, 65536);
  EXPECT_DOUBLE_EQ(hw.device.host_exchange[0].copy, 4e-6);
  EXPECT_DOUBLE_EQ(hw.device.host_exchange[0].sum, 3e-6);
  EXPECT_EQ(hw.device.host_exchange[1].bytes, 2097152);
  EXPECT_DOUBLE_EQ(hw.device.host_exchange[1].copy, 1.5e-4);
  EXPECT_DOUBLE_EQ(hw.device.host_exchange[1].sum, 1e-4);
  const HardwareProfile shipped =
      load_hardware_profile(write_profile(dir, shipped_profile("this-machine-cpu")));
  EXPECT_TRUE(shipped.device.host_exchange.empty());
  EXPECT_EQ(shipped.device.host_exchange_devices, 0);
  expect_each_refused(dir, j, "/device/host_exchange", "host_exchange",
                      {
                          {[](json& c) { c = json::array(); }, "must be a non-empty array"},
                          {[](json& c) { c = json::object(); }, "must be a non-empty array"},
                          {[](json& c) { c[1]["bytes"] = 65536; }, "must ascend in 'bytes'"},
                          {[](json& c) { c[0]["bytes"] = 65536.5; }, "a whole number >= 1"},
                          {[](json& c) { c[0] = 3; }, "a whole number >= 1"},
                          {[](json& c) { c[0]["copy"] = 0; }, "'copy' must be > 0"},
                          {[](json& c) { c[1].erase("sum"); }, "missing number 'sum'"},
                      });
  expect_each_refused(
      dir, j, "/device", "host_exchange",
      {
          {[](json& d) { d.erase("host_exchange_devices"); }, "needs 'host_exchange_devices'"},
          {[](json& d) { d.erase("host_exchange"); },
           "'host_exchange_devices' without 'host_exchange'"},
          {[](json& d) { d["host_exchange_devices"] = 1; }, "2 or more"},
          {[](json& d) { d["host_exchange_devices"] = 1.5; }, "whole number"},
      });
}

// The all-reduce reducer's exchange timed at once: read back ascending with its devices; an
// older profile has none; malformed ones refused naming the file and the field.
TEST(HardwareProfileFile, TheAllreduceTimedAtOnceIsReadAndChecked) {
  test::TempDir dir;
  json j = shipped_profile("this-machine-cpu");
  j["device"]["allreduce_exchange"] = {{{"bytes", 4096}, {"seconds", 2e-6}},
                                       {{"bytes", 67108864}, {"seconds", 9e-3}}};
  j["device"]["allreduce_exchange_devices"] = 2;
  const HardwareProfile hw = load_hardware_profile(write_profile(dir, j));
  ASSERT_EQ(hw.device.allreduce_exchange.size(), 2u);
  EXPECT_EQ(hw.device.allreduce_exchange_devices, 2);
  EXPECT_EQ(hw.device.allreduce_exchange[0].bytes, 4096);
  EXPECT_DOUBLE_EQ(hw.device.allreduce_exchange[0].seconds, 2e-6);
  EXPECT_EQ(hw.device.allreduce_exchange[1].bytes, 67108864);
  EXPECT_DOUBLE_EQ(hw.device.allreduce_exchange[1].seconds, 9e-3);
  const HardwareProfile shipped =
      load_hardware_profile(write_profile(dir, shipped_profile("this-machine-cpu")));
  EXPECT_TRUE(shipped.device.allreduce_exchange.empty());
  EXPECT_EQ(shipped.device.allreduce_exchange_devices, 0);
  expect_each_refused(dir, j, "/device/allreduce_exchange", "allreduce_exchange",
                      {
                          {[](json& c) { c = json::array(); }, "must be a non-empty array"},
                          {[](json& c) { c[1]["bytes"] = 4096; }, "must ascend in 'bytes'"},
                          {[](json& c) { c[0]["bytes"] = 0; }, "a whole number >= 1"},
                          {[](json& c) { c[0]["seconds"] = 0; }, "'seconds' must be > 0"},
                          {[](json& c) { c[1].erase("seconds"); }, "missing number 'seconds'"},
                      });
  expect_each_refused(dir, j, "/device", "allreduce_exchange",
                      {
                          {[](json& d) { d.erase("allreduce_exchange_devices"); },
                           "needs 'allreduce_exchange_devices'"},
                          {[](json& d) { d.erase("allreduce_exchange"); },
                           "'allreduce_exchange_devices' without 'allreduce_exchange'"},
                          {[](json& d) { d["allreduce_exchange_devices"] = 1; }, "2 or more"},
                      });
}

// A dense model's measured steps (dense_rates[].points), with or without their update's
// seconds: read back ascending; malformed ones refused naming the file and the field; an
// entry without them keeps its line.
TEST(HardwareProfileFile, DenseRatePointsAreReadAndChecked) {
  test::TempDir dir;
  json j = shipped_profile("this-machine-cpu");
  j["device"]["dense_rates"] = {
      {{"widths", {784, 256, 10}},
       {"sustained_flops", 1e11},
       {"half_rows", 12},
       {"points",
        {{{"rows", 12}, {"compute_seconds", 1e-4}}, {{"rows", 48}, {"compute_seconds", 3e-4}}}}}};
  const HardwareProfile hw = load_hardware_profile(write_profile(dir, j));
  ASSERT_EQ(hw.device.dense_rates.size(), 1u);
  ASSERT_EQ(hw.device.dense_rates[0].points.size(), 2u);
  EXPECT_EQ(hw.device.dense_rates[0].points[1].rows, 48);
  EXPECT_DOUBLE_EQ(hw.device.dense_rates[0].points[0].compute_seconds, 1e-4);
  json line = j;
  line["device"]["dense_rates"][0].erase("points");
  EXPECT_TRUE(load_hardware_profile(write_profile(dir, line)).device.dense_rates[0].points.empty());
  expect_each_refused(
      dir, j, "/device/dense_rates/0/points", "points",
      {
          {[](json& p) { p = "fast"; }, "must be an array of 2 or more"},
          {[](json& p) { p.erase(1); }, "must be an array of 2 or more"},
          {[](json& p) { p[0].erase("rows"); }, "needs 'rows'"},
          {[](json& p) { p[0]["rows"] = 0; }, "needs 'rows'"},
          {[](json& p) { p[0]["rows"] = 1.5; }, "needs 'rows'"},
          {[](json& p) { p[1]["rows"] = 12; }, "must ascend in 'rows', got 12 after 12"},
          {[](json& p) { p[0]["compute_seconds"] = 0; }, "compute_seconds"},
          {[](json& p) { p[1].erase("compute_seconds"); }, "compute_seconds"},
          {[](json& p) { p[0] = 7; }, "needs 'rows'"},
      });
  EXPECT_EQ(hw.device.dense_rates[0].points[0].update_seconds, 0);  // not measured
  // The update's seconds in those steps: on every point or none, each > 0.
  json updates = j;
  updates["device"]["dense_rates"][0]["points"][0]["update_seconds"] = 2e-5;
  updates["device"]["dense_rates"][0]["points"][1]["update_seconds"] = 3e-5;
  const HardwareProfile with = load_hardware_profile(write_profile(dir, updates));
  EXPECT_DOUBLE_EQ(with.device.dense_rates[0].points[0].update_seconds, 2e-5);
  EXPECT_DOUBLE_EQ(with.device.dense_rates[0].points[1].update_seconds, 3e-5);
  expect_each_refused(
      dir, updates, "/device/dense_rates/0/points", "points",
      {
          {[](json& p) { p[1].erase("update_seconds"); }, "on every entry or on none"},
          {[](json& p) { p[0].erase("update_seconds"); }, "on every entry or on none"},
          {[](json& p) { p[1]["update_seconds"] = 0; }, "update_seconds"},
          {[](json& p) { p[0]["update_seconds"] = "fast"; }, "update_seconds"},
      });
  // The steps with every rank computing at once, and the ranks they ran on.
  j["device"]["dense_rates"][0]["ranks_points"] = j["device"]["dense_rates"][0]["points"];
  j["device"]["dense_rates"][0]["ranks"] = 2;
  const HardwareProfile ranks = load_hardware_profile(write_profile(dir, j));
  EXPECT_EQ(ranks.device.dense_rates[0].ranks, 2);
  ASSERT_EQ(ranks.device.dense_rates[0].ranks_points.size(), 2u);
  EXPECT_EQ(ranks.device.dense_rates[0].ranks_points[1].rows, 48);
  expect_each_refused(
      dir, j, "/device/dense_rates/0", "ranks_points",
      {
          {[](json& c) { c.erase("ranks"); }, "needs 'ranks', a whole number >= 2"},
          {[](json& c) { c["ranks"] = 1; }, "needs 'ranks', a whole number >= 2"},
          {[](json& c) { c["ranks"] = "two"; }, "needs 'ranks', a whole number >= 2"},
          {[](json& c) { c["ranks_points"][1]["rows"] = 6; }, "must ascend in 'rows'"},
          {[](json& c) { c["ranks_points"] = json::array(); }, "must be an array of 2 or more"},
      });
}

// dense_rates[].weight_grad_gemms: for each device count timed, ascending, per row count the
// whole and shard GEMMs warm and cold; read back as written (one object, as the first
// profiles wrote it, is one device count), malformed ones refused.
TEST(HardwareProfileFile, WeightGradGemmsAreReadAndChecked) {
  test::TempDir dir;
  json j = shipped_profile("this-machine-cpu");
  json two = {{"devices", 2},
              {"points",
               {{{"rows", 12},
                 {"whole", 2e-4},
                 {"shard", 1e-4},
                 {"whole_cold", 4e-4},
                 {"shard_cold", 3e-4}},
                {{"rows", 48},
                 {"whole", 5e-4},
                 {"shard", 4e-4},
                 {"whole_cold", 6e-4},
                 {"shard_cold", 5e-4}}}}};
  json four = two;
  four["devices"] = 4;
  four["points"][0]["shard"] = 7e-5;
  // Timed as a step runs them (since 2026-12-05): the 2 devices' points; the 4's as before.
  for (json& point : two["points"]) {
    point["whole_step"] = 3e-4;
    point["shard_step"] = 2e-4;
    point["input_step"] = 1e-4;
  }
  two["points"][1]["input_step"] = 1.5e-4;
  // Steps at once as profiles of 2026-12-05 hold them, four fields of each point: the 2
  // devices'; the 4's as later ones do, an array of their own with rows between the points'.
  four["steps_at_once"] = {{{"rows", 12},
                            {"forward_alone", 1e-3},
                            {"backward_alone", 2e-3},
                            {"forward_shared", 1e-3},
                            {"backward_shared", 1e-3},
                            {"median",
                             {{"forward_alone", 1e-3},
                              {"backward_alone", 2e-3},
                              {"forward_shared", 1e-3},
                              {"backward_shared", 1e-3}}}},
                           {{"rows", 30},
                            {"forward_alone", 2e-3},
                            {"backward_alone", 2e-3},
                            {"forward_shared", 2e-3},
                            {"backward_shared", 1e-3},
                            {"median",
                             {{"forward_alone", 2.5e-3},
                              {"backward_alone", 2.5e-3},
                              {"forward_shared", 2.2e-3},
                              {"backward_shared", 1.8e-3}}}},
                           {{"rows", 48},
                            {"forward_alone", 3e-3},
                            {"backward_alone", 3e-3},
                            {"forward_shared", 3e-3},
                            {"backward_shared", 3e-3},
                            {"median",
                             {{"forward_alone", 3e-3},
                              {"backward_alone", 3e-3},
                              {"forward_shared", 3e-3},
                              {"backward_shared", 3e-3}}}}};
  // And their micro-shards (profiles since 2026-12-06), with the count per device.
  for (json& entry : four["steps_at_once"]) {
    entry["forward_micro"] = 1.5e-3;
    entry["backward_micro"] = 2.5e-3;
    entry["median"]["forward_micro"] = 2e-3;
    entry["median"]["backward_micro"] = 3e-3;
  }
  four["micro_shards"] = 1;
  // And the own copies' (profiles since 2026-12-07), with their wait.
  for (json& entry : four["steps_at_once"]) {
    entry["forward_own"] = 1.2e-3;
    entry["backward_own"] = 2.8e-3;
    entry["wait_own"] = 2e-4;
    entry["median"]["forward_own"] = 1.6e-3;
    entry["median"]["backward_own"] = 3.4e-3;
    entry["median"]["wait_own"] = 0;  // devices that end together
    // and (later that day) their all-reduce from the backward's end
    entry["exchange_own"] = 3e-4;
    entry["median"]["exchange_own"] = 4e-4;
  }
  for (json& point : two["points"]) {
    point["forward_alone"] = 1e-3;
    point["backward_alone"] = 2e-3;
    point["forward_shared"] = 1.1e-3;
    point["backward_shared"] = 1.6e-3;
  }
  two["points"][1]["backward_shared"] = 2.9e-3;
  j["device"]["dense_rates"] = {{{"widths", {784, 256, 10}},
                                 {"sustained_flops", 1e11},
                                 {"half_rows", 12},
                                 {"weight_grad_gemms", {two, four}}}};
  const HardwareProfile hw = load_hardware_profile(write_profile(dir, j));
  const auto& timed = hw.device.dense_rates.at(0).weight_grad_gemms;
  ASSERT_EQ(timed.size(), 2u);
  EXPECT_EQ(timed[0].devices, 2);
  EXPECT_EQ(timed[1].devices, 4);
  ASSERT_EQ(timed[0].points.size(), 2u);
  EXPECT_EQ(timed[0].points[1].rows, 48);
  EXPECT_DOUBLE_EQ(timed[0].points[0].whole, 2e-4);
  EXPECT_DOUBLE_EQ(timed[0].points[0].shard, 1e-4);
  EXPECT_DOUBLE_EQ(timed[0].points[0].whole_cold, 4e-4);
  EXPECT_DOUBLE_EQ(timed[0].points[1].shard_cold, 5e-4);
  EXPECT_DOUBLE_EQ(timed[1].points[0].shard, 7e-5);
  EXPECT_DOUBLE_EQ(timed[0].points[0].whole_step, 3e-4);
  EXPECT_DOUBLE_EQ(timed[0].points[0].shard_step, 2e-4);
  EXPECT_DOUBLE_EQ(timed[0].points[1].input_step, 1.5e-4);
  EXPECT_EQ(timed[1].points[0].whole_step, 0);  // not timed as a step
  EXPECT_EQ(timed[1].points[1].input_step, 0);
  ASSERT_EQ(timed[0].at_once.size(), 2u);  // from the points' fields
  EXPECT_EQ(timed[0].at_once[0].rows, 12);
  EXPECT_EQ(timed[0].at_once[1].rows, 48);
  EXPECT_DOUBLE_EQ(timed[0].at_once[0].best.forward_alone, 1e-3);
  EXPECT_DOUBLE_EQ(timed[0].at_once[0].best.backward_alone, 2e-3);
  EXPECT_DOUBLE_EQ(timed[0].at_once[0].best.forward_shared, 1.1e-3);
  EXPECT_DOUBLE_EQ(timed[0].at_once[1].best.backward_shared, 2.9e-3);
  EXPECT_DOUBLE_EQ(timed[0].at_once[0].best.shared_over_alone(), 0.9);
  EXPECT_DOUBLE_EQ(timed[0].at_once[1].best.shared_over_alone(), 4.0 / 3.0);
  ASSERT_EQ(timed[1].at_once.size(), 3u);  // from steps_at_once
  EXPECT_EQ(timed[1].at_once[1].rows, 30);
  EXPECT_DOUBLE_EQ(timed[1].at_once[1].best.shared_over_alone(), 0.75);
  EXPECT_DOUBLE_EQ(timed[1].at_once[2].best.backward_shared, 3e-3);
  // The rounds' median beside their best, in every entry (profiles since 2026-12-05, morning);
  // the cost model takes them.
  EXPECT_TRUE(timed[1].at_once[0].has_medians());
  EXPECT_TRUE(timed[1].at_once[2].has_medians());
  ASSERT_TRUE(timed[1].at_once[1].has_medians());
  EXPECT_DOUBLE_EQ(timed[1].at_once[1].median.forward_alone, 2.5e-3);
  EXPECT_DOUBLE_EQ(timed[1].at_once[1].median.backward_alone, 2.5e-3);
  EXPECT_DOUBLE_EQ(timed[1].at_once[1].median.forward_shared, 2.2e-3);
  EXPECT_DOUBLE_EQ(timed[1].at_once[1].median.backward_shared, 1.8e-3);
  EXPECT_DOUBLE_EQ(timed[1].at_once[1].median.shared_over_alone(), 0.8);
  EXPECT_DOUBLE_EQ(timed[1].at_once[1].modelled_shared_over_alone(), 0.8);
  EXPECT_FALSE(timed[0].at_once[0].has_medians());
  EXPECT_DOUBLE_EQ(timed[0].at_once[0].modelled_shared_over_alone(), 0.9);
  EXPECT_EQ(timed[1].micro_shards, 1);
  EXPECT_DOUBLE_EQ(timed[1].at_once[1].best.forward_micro, 1.5e-3);
  EXPECT_DOUBLE_EQ(timed[1].at_once[1].best.backward_micro, 2.5e-3);
  EXPECT_DOUBLE_EQ(timed[1].at_once[1].modelled_micro_over_alone(), 1.0);  // (2 + 3) / 5
  EXPECT_DOUBLE_EQ(timed[1].at_once[0].best.micro_over_alone(), 4.0 / 3.0);
  EXPECT_EQ(timed[0].micro_shards, 0);  // none timed
  EXPECT_FALSE(timed[0].at_once[0].best.has_micro());
  EXPECT_DOUBLE_EQ(timed[1].at_once[1].best.forward_own, 1.2e-3);
  EXPECT_DOUBLE_EQ(timed[1].at_once[1].best.backward_own, 2.8e-3);
  EXPECT_DOUBLE_EQ(timed[1].at_once[1].best.wait_own, 2e-4);
  EXPECT_DOUBLE_EQ(timed[1].at_once[1].median.own_over_alone(), 1.0);  // (1.6 + 3.4) / 5
  EXPECT_EQ(timed[1].at_once[2].median.wait_own, 0);
  EXPECT_TRUE(timed[1].at_once[2].median.has_own());
  EXPECT_FALSE(timed[0].at_once[0].best.has_own());  // none timed
  EXPECT_EQ(timed[0].at_once[0].best.wait_own, 0);
  EXPECT_DOUBLE_EQ(timed[1].at_once[1].best.exchange_own, 3e-4);
  EXPECT_DOUBLE_EQ(timed[1].at_once[2].median.exchange_own, 4e-4);
  EXPECT_TRUE(timed[1].at_once[0].best.has_exchange());
  EXPECT_FALSE(timed[0].at_once[0].best.has_exchange());  // none timed
  json untimed = j;
  untimed["device"]["dense_rates"][0]["weight_grad_gemms"][1].erase("steps_at_once");
  untimed["device"]["dense_rates"][0]["weight_grad_gemms"][1].erase("micro_shards");
  EXPECT_TRUE(load_hardware_profile(write_profile(dir, untimed))
                  .device.dense_rates.at(0)
                  .weight_grad_gemms[1]
                  .at_once.empty());
  json one = j;
  one["device"]["dense_rates"][0]["weight_grad_gemms"] = two;
  const auto single = load_hardware_profile(write_profile(dir, one)).device.dense_rates.at(0);
  ASSERT_EQ(single.weight_grad_gemms.size(), 1u);
  EXPECT_EQ(single.weight_grad_gemms[0].devices, 2);
  expect_each_refused(
      dir, j, "/device/dense_rates/0/weight_grad_gemms", "weight_grad_gemms",
      {
          {[](json& g) { g[0].erase("devices"); }, "needs 'devices', a whole number >= 2"},
          {[](json& g) { g[0]["devices"] = 1; }, "needs 'devices', a whole number >= 2"},
          {[](json& g) { g[1]["devices"] = 2.5; }, "needs 'devices', a whole number >= 2"},
          {[](json& g) { g[1]["devices"] = 2; }, "must ascend in 'devices', got 2 after 2"},
          {[](json& g) { g = json::array(); }, "must be an array of {devices, points}"},
          {[](json& g) { g = 7; }, "must be an array of {devices, points}"},
          {[](json& g) { g[0]["points"] = json::array(); }, "needs 'points'"},
          {[](json& g) { g[1].erase("points"); }, "needs 'points'"},
          {[](json& g) { g[0]["points"][1]["rows"] = 12; },
           "must ascend in 'rows', got 12 after 12"},
          {[](json& g) { g[0]["points"][0]["shard"] = 0; }, "shard"},
          {[](json& g) { g[1]["points"][1].erase("whole_cold"); }, "whole_cold"},
          {[](json& g) { g[0]["points"][0]["shard_cold"] = "fast"; }, "shard_cold"},
          {[](json& g) { g[0]["points"][1]["shard_step"] = 0; }, "'shard_step' must be > 0"},
          {[](json& g) { g[0]["points"][0].erase("input_step"); }, "missing number 'input_step'"},
          {[](json& g) { g[0]["points"][0]["input_step"] = -1e-4; }, "'input_step' must be"},
          {[](json& g) { g[1]["points"][0]["whole_step"] = 1e-4; }, "shard_step"},
          {[](json& g) {
             for (const char* k : {"whole_step", "shard_step", "input_step"}) {
               g[0]["points"][1].erase(k);
             }
           },
           "point at 48 rows: whole_step, shard_step and input_step in every point or none"},
          {[](json& g) { g[0]["points"][0]["forward_shared"] = 0; },
           "point at 12 rows: 'forward_shared' must be > 0"},
          {[](json& g) { g[0]["points"][1].erase("backward_alone"); },
           "point at 48 rows: missing number 'backward_alone'"},
          {[](json& g) { g[1]["points"][1]["forward_alone"] = 1e-3; },
           "missing number 'backward_alone'"},
          {[](json& g) {
             for (const char* k :
                  {"forward_alone", "backward_alone", "forward_shared", "backward_shared"}) {
               g[0]["points"][0].erase(k);
             }
           },
           "point at 48 rows: forward_alone, backward_alone, forward_shared and backward_shared "
           "in every point or none"},
          {[](json& g) { g[0]["steps_at_once"] = g[1]["steps_at_once"]; },
           "steps_at_once with the same timings in the points: one or the other"},
          {[](json& g) { g[1]["steps_at_once"] = json::array(); },
           "steps_at_once must be an array of {rows, forward_alone"},
          {[](json& g) { g[1]["steps_at_once"] = 3; },
           "steps_at_once must be an array of {rows, forward_alone"},
          {[](json& g) { g[1]["steps_at_once"][2]["rows"] = 30; },
           "steps_at_once: entries must ascend in 'rows', got 30 after 30"},
          {[](json& g) { g[1]["steps_at_once"][0].erase("rows"); },
           "steps_at_once: each entry needs 'rows'"},
          {[](json& g) { g[1]["steps_at_once"][1]["backward_shared"] = 0; },
           "steps_at_once: entry at 30 rows: 'backward_shared' must be > 0"},
          {[](json& g) { g[1]["steps_at_once"][2].erase("forward_alone"); },
           "steps_at_once: entry at 48 rows: missing number 'forward_alone'"},
          {[](json& g) { g[1]["steps_at_once"][1]["median"] = 0.5; },
           "steps_at_once: entry at 30 rows: 'median' must be an object of forward_alone"},
          {[](json& g) { g[1]["steps_at_once"][1]["median"].erase("backward_shared"); },
           "steps_at_once: entry at 30 rows: median: missing number 'backward_shared'"},
          {[](json& g) { g[1]["steps_at_once"][1]["median"]["forward_alone"] = -1; },
           "steps_at_once: entry at 30 rows: median: 'forward_alone' must be > 0"},
          {[](json& g) { g[1]["steps_at_once"][0].erase("median"); },
           "steps_at_once: entry at 30 rows: 'median' in every entry or none"},
          {[](json& g) { g[1]["steps_at_once"][2].erase("median"); },
           "steps_at_once: entry at 48 rows: 'median' in every entry or none"},
          {[](json& g) { g[0]["points"][0]["median"] = g[1]["steps_at_once"][0]["median"]; },
           "points: point at 12 rows: 'median' belongs in a steps_at_once entry"},
          {[](json& g) { g[0]["points"][1]["forward_micro"] = 1e-3; },
           "points: point at 48 rows: 'forward_micro' belongs in a steps_at_once entry"},
          {[](json& g) { g[1]["steps_at_once"][1].erase("backward_micro"); },
           "steps_at_once: entry at 30 rows: missing number 'backward_micro'"},
          {[](json& g) { g[1]["steps_at_once"][2]["median"]["forward_micro"] = 0; },
           "steps_at_once: entry at 48 rows: median: 'forward_micro' must be > 0"},
          {[](json& g) {
             g[1]["steps_at_once"][1].erase("forward_micro");
             g[1]["steps_at_once"][1].erase("backward_micro");
           },
           "steps_at_once: entry at 30 rows: forward_micro and backward_micro in every entry and "
           "its median, or in none"},
          {[](json& g) {
             g[1]["steps_at_once"][0]["median"].erase("forward_micro");
             g[1]["steps_at_once"][0]["median"].erase("backward_micro");
           },
           "steps_at_once: entry at 12 rows: forward_micro and backward_micro in every entry and "
           "its median, or in none"},
          {[](json& g) { g[0]["points"][0]["wait_own"] = 1e-4; },
           "points: point at 12 rows: 'wait_own' belongs in a steps_at_once entry"},
          {[](json& g) { g[1]["steps_at_once"][1].erase("wait_own"); },
           "steps_at_once: entry at 30 rows: missing number 'wait_own' (with forward_own and "
           "backward_own)"},
          {[](json& g) { g[1]["steps_at_once"][2].erase("backward_own"); },
           "steps_at_once: entry at 48 rows: missing number 'backward_own'"},
          {[](json& g) { g[1]["steps_at_once"][0]["median"]["wait_own"] = -1e-6; },
           "steps_at_once: entry at 12 rows: median: 'wait_own' must be"},
          {[](json& g) { g[1]["steps_at_once"][1]["forward_own"] = 0; },
           "steps_at_once: entry at 30 rows: 'forward_own' must be > 0"},
          {[](json& g) {
             for (const char* k : {"forward_own", "backward_own", "wait_own", "exchange_own"}) {
               g[1]["steps_at_once"][2].erase(k);
             }
           },
           "steps_at_once: entry at 48 rows: forward_own, backward_own and wait_own in every "
           "entry and its median, or in none"},
          {[](json& g) {
             for (const char* k : {"forward_own", "backward_own", "wait_own", "exchange_own"}) {
               g[1]["steps_at_once"][0]["median"].erase(k);
             }
           },
           "steps_at_once: entry at 12 rows: forward_own, backward_own and wait_own in every "
           "entry and its median, or in none"},
          {[](json& g) { g[0]["points"][1]["exchange_own"] = 1e-4; },
           "points: point at 48 rows: 'exchange_own' belongs in a steps_at_once entry"},
          {[](json& g) {
             for (const char* k : {"forward_own", "backward_own", "wait_own"}) {
               g[1]["steps_at_once"][1].erase(k);
             }
           },
           "steps_at_once: entry at 30 rows: 'exchange_own' without forward_own, backward_own "
           "and wait_own"},
          {[](json& g) { g[1]["steps_at_once"][1]["exchange_own"] = 1e-4; },  // wait 2e-4
           "steps_at_once: entry at 30 rows: 'exchange_own' is less than 'wait_own'"},
          {[](json& g) { g[1]["steps_at_once"][2]["median"]["exchange_own"] = 0; },
           "steps_at_once: entry at 48 rows: median: 'exchange_own' must be > 0"},
          {[](json& g) { g[1]["steps_at_once"][1].erase("exchange_own"); },
           "steps_at_once: entry at 30 rows: exchange_own in every entry and its median, or in "
           "none"},
          {[](json& g) { g[1]["steps_at_once"][0]["median"].erase("exchange_own"); },
           "steps_at_once: entry at 12 rows: exchange_own in every entry and its median, or in "
           "none"},
          {[](json& g) { g[1].erase("micro_shards"); },
           "weight_grad_gemms[1] needs 'micro_shards', a whole number from 1 to 64"},
          {[](json& g) { g[0]["micro_shards"] = 2; },
           "'micro_shards' without forward_micro and backward_micro in its steps_at_once"},
          {[](json& g) { g[1]["micro_shards"] = 0; }, "'micro_shards' must be a whole number"},
          {[](json& g) { g[1]["micro_shards"] = 1.5; }, "'micro_shards' must be a whole number"},
      });
}

// device.conv_shapes and conv_step_scale: read back as written; malformed ones refused.
TEST(HardwareProfileFile, ConvShapesAreReadAndChecked) {
  test::TempDir dir;
  json j = shipped_profile("this-machine-cpu");
  ConvShapeSeconds shape;
  shape.window = {.batch = 1,
                  .in_h = 13,
                  .in_w = 13,
                  .in_c = 32,
                  .out_h = 11,
                  .out_w = 11,
                  .out_c = 64,
                  .kernel_h = 3,
                  .kernel_w = 3};
  shape.batch = 64;
  shape.forward = 1e-4, shape.backward_data = 2e-4, shape.backward_weights = 3e-4;
  j["device"]["conv_shapes"] = {conv_shape_to_json(shape)};
  j["device"]["conv_step_scale"] = 1.2;
  j["device"]["pool_scale"] = 2.5;
  const HardwareProfile hw = load_hardware_profile(write_profile(dir, j));
  ASSERT_EQ(hw.device.conv_shapes.size(), 1u);
  EXPECT_TRUE(same_conv_shape(hw.device.conv_shapes[0].window, shape.window));
  EXPECT_EQ(hw.device.conv_shapes[0].batch, 64);
  EXPECT_DOUBLE_EQ(hw.device.conv_shapes[0].backward_weights, 3e-4);
  EXPECT_DOUBLE_EQ(hw.device.conv_step_scale, 1.2);
  EXPECT_DOUBLE_EQ(hw.device.pool_scale, 2.5);
  EXPECT_DOUBLE_EQ(load_hardware_profile(write_profile(dir, shipped_profile("this-machine-cpu")))
                       .device.pool_scale,
                   1);  // not measured
  const std::vector<std::pair<std::function<void(json&)>, std::string>> broken = {
      {[](json& d) { d["conv_shapes"] = "x"; }, "conv_shapes must be an array"},
      {[](json& d) {
         d["conv_shapes"][0]["input"] = {13, 13};
       },
       "'input' must be an array of 3"},
      {[](json& d) {
         d["conv_shapes"][0]["padding"] = {0, 0, -1, 0};
       },
       "'padding' must hold"},
      {[](json& d) {
         d["conv_shapes"][0]["kernel"] = {0, 3};
       },
       "'kernel' must hold"},
      {[](json& d) { d["conv_shapes"][0].erase("batch"); }, "batch"},
      {[](json& d) { d["conv_shapes"][0]["forward"] = 0; }, "forward"},
      {[](json& d) { d.erase("conv_shapes"); }, "conv_step_scale"},
      {[](json& d) { d["pool_scale"] = 0; }, "'pool_scale'"},
      {[](json& d) { d["pool_scale"] = "fast"; }, "'pool_scale'"},
  };
  for (const auto& [edit, message] : broken) {
    json bad = j;
    edit(bad["device"]);
    const std::string path = write_profile(dir, bad);
    test::expect_error<ConfigError>([&] { load_hardware_profile(path); }, {path, message});
  }
}

}  // namespace
}  // namespace tandem::detail
