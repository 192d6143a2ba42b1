// Whether a cache reading (window_check.h, cache_seconds: every device at once streaming half its
// core's private cache) depends on the group of devices that reads it: --groups groups of
// --devices devices, made one after another in this process on the same cores, each reading
// --readings times --interval seconds apart. Prints each group's fastest and median reading,
// then the spread of the groups' fastest readings, and how many readings are crowded
// (kCrowdedCache) against the process's fastest, as bench validate judges its repetitions, and
// against their own group's fastest.
//   reader_bench [--groups 20] [--devices 2] [--readings 50] [--interval 0.005]
//                [--json out.json]
// docs/SCALING.md, "The windows on the Xeon, and a cache reading that depends on its reader",
// cites its figures.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "advise/step_run.h"
#include "advise/window_check.h"
#include "core/atomic_file.h"
#include "parallel/device_group.h"

namespace td = tandem::detail;

namespace {

struct Options {
  int groups = 20, devices = 2, readings = 50;
  double interval = 0.005;
  std::string json;
};

Options parse(int argc, char** argv) {
  Options o;
  CLI::App app{"Whether a cache reading depends on the group of devices that reads it"};
  app.add_option("--groups", o.groups, "groups of devices, one after another")
      ->check(CLI::Range(1, 10000));
  app.add_option("--devices", o.devices, "devices per group")->check(CLI::Range(1, 1024));
  app.add_option("--readings", o.readings, "readings per group")->check(CLI::Range(1, 100000));
  app.add_option("--interval", o.interval, "seconds between a group's readings")
      ->check(CLI::Range(0.0, 60.0));
  app.add_option("--json", o.json, "write every reading here");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e));
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  std::vector<std::vector<double>> readings;  // [group][reading], seconds
  for (int g = 0; g < o.groups; ++g) {
    td::DeviceGroup group(td::plan_devices(o.devices, 1));
    std::vector<double>& mine = readings.emplace_back();
    for (int r = 0; r < o.readings; ++r) {
      mine.push_back(td::cache_seconds(group));
      std::this_thread::sleep_for(std::chrono::duration<double>(o.interval));
    }
    std::printf("group %3d: fastest %6.1f us, median %6.1f us\n", g,
                *std::min_element(mine.begin(), mine.end()) * 1e6, td::median_of(mine) * 1e6);
    std::fflush(stdout);
  }
  const double fastest = td::best_cache_seconds(o.devices);
  std::vector<double> floors;
  int crowded_process = 0, crowded_own = 0, total = 0;
  for (const std::vector<double>& mine : readings) {
    const double own = *std::min_element(mine.begin(), mine.end());
    floors.push_back(own);
    for (const double seconds : mine) {
      ++total;
      crowded_process += td::cache_crowded(seconds, fastest);
      crowded_own += td::cache_crowded(seconds, own);
    }
  }
  std::sort(floors.begin(), floors.end());
  std::printf(
      "%d groups of %d devices: their fastest readings %.1f to %.1f us (median %.1f); of %d "
      "readings, %d crowded against the process's fastest (%.1f us), %d against their own "
      "group's\n",
      o.groups, o.devices, floors.front() * 1e6, floors.back() * 1e6, td::median_of(floors) * 1e6,
      total, crowded_process, fastest * 1e6, crowded_own);
  if (!o.json.empty()) {
    const nlohmann::json out = {{"groups", o.groups},     {"devices", o.devices},
                                {"readings", o.readings}, {"interval", o.interval},
                                {"fastest", fastest},     {"seconds", readings}};
    tandem::write_file_atomically(o.json, out.dump(1) + "\n");
  }
  return 0;
}
