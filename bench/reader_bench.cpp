// Whether a cache reading (window_check.h, cache_seconds: every device at once streaming half its
// core's private cache) depends on the group of devices that reads it: --groups groups of
// --devices devices, made one after another in this process on the same cores, each reading
// --readings times --interval seconds apart. Prints each group's fastest and median reading,
// then the spread of the groups' fastest readings, and how many readings are crowded
// (kCrowdedCache) against the process's fastest, as bench validate judges its repetitions, and
// against their own group's fastest.
// With --interleave every group stays alive (its devices keep their buffers, so each group's
// buffers are memory no other group uses) and the groups read in turn, one reading each per
// round: a change of the machine over the run then falls on every group alike, and a floor
// that stays with its group in both halves of the rounds is the group's own. It prints each
// group's fastest reading in the first and the second half of the rounds, and the rank
// correlation between the halves over the groups.
// With --huge-pages each device streams buffers the kernel is asked to back with huge pages
// (window_check.h, CacheBuffers::kHugePages) instead of the tools' own vectors: if a group's
// floor comes from where its buffers' 4 KiB pages fall in the cache's sets, the groups' floors
// then agree. It prints how much of the process's memory huge pages back.
//   reader_bench [--groups 20] [--devices 2] [--readings 50] [--interval 0.005]
//                [--interleave] [--huge-pages] [--json out.json]
// docs/SCALING.md, "The windows on the Xeon, and a cache reading that depends on its reader",
// cites its figures.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
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
  bool interleave = false, huge_pages = false;
  std::string json;
};

Options parse(int argc, char** argv) {
  Options o;
  CLI::App app{"Whether a cache reading depends on the group of devices that reads it"};
  app.add_option("--groups", o.groups, "groups of devices, one after another")
      ->check(CLI::Range(1, 10000));
  app.add_option("--devices", o.devices, "devices per group")->check(CLI::Range(1, 1024));
  app.add_option("--readings", o.readings, "readings per group")->check(CLI::Range(1, 100000));
  app.add_option("--interval", o.interval,
                 "seconds after each reading (with --interleave, between any two groups' readings)")
      ->check(CLI::Range(0.0, 60.0));
  app.add_flag("--interleave", o.interleave,
               "keep every group alive and read the groups in turn, one reading per round");
  app.add_flag("--huge-pages", o.huge_pages,
               "read buffers the kernel is asked to back with huge pages, not the tools' own");
  app.add_option("--json", o.json, "write every reading here");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e));
  }
  return o;
}

td::CacheBuffers buffers_of(const Options& o) {
  return o.huge_pages ? td::CacheBuffers::kHugePages : td::CacheBuffers::kOwnPages;
}

// KiB of this process's memory backed by transparent huge pages (AnonHugePages in
// /proc/self/smaps_rollup; -1 where the file or the line is missing).
long huge_page_kib() {
  std::ifstream in("/proc/self/smaps_rollup");
  std::string line;
  while (std::getline(in, line)) {
    long kib = 0;
    if (std::sscanf(line.c_str(), "AnonHugePages: %ld kB", &kib) == 1) return kib;
  }
  return -1;
}

// Ranks of `values` (0 = smallest; ties in order of index).
std::vector<double> ranks_of(const std::vector<double>& values) {
  std::vector<size_t> order(values.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<double> rank(values.size());
  for (size_t r = 0; r < order.size(); ++r) rank[order[r]] = static_cast<double>(r);
  return rank;
}

// Spearman's rank correlation of two equally long series (0 for fewer than 2 values).
double rank_correlation(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = x.size();
  if (n < 2) return 0;
  const std::vector<double> rx = ranks_of(x), ry = ranks_of(y);
  double d2 = 0;
  for (size_t i = 0; i < n; ++i) d2 += (rx[i] - ry[i]) * (rx[i] - ry[i]);
  const double nn = static_cast<double>(n);
  return 1 - 6 * d2 / (nn * (nn * nn - 1));
}

// Each group made, read --readings times and ended before the next: readings[group][reading].
// `huge_kib`: the most huge_page_kib() read while a group was alive (its devices' buffers are
// freed with their threads).
std::vector<std::vector<double>> read_one_after_another(const Options& o, long& huge_kib) {
  std::vector<std::vector<double>> readings;
  for (int g = 0; g < o.groups; ++g) {
    td::DeviceGroup group(td::plan_devices(o.devices, 1));
    std::vector<double>& mine = readings.emplace_back();
    for (int r = 0; r < o.readings; ++r) {
      mine.push_back(td::cache_seconds(group, buffers_of(o)));
      std::this_thread::sleep_for(std::chrono::duration<double>(o.interval));
    }
    huge_kib = std::max(huge_kib, huge_page_kib());
    std::printf("group %3d: fastest %6.1f us, median %6.1f us\n", g,
                *std::min_element(mine.begin(), mine.end()) * 1e6, td::median_of(mine) * 1e6);
    std::fflush(stdout);
  }
  return readings;
}

// Every group alive, read in turn: readings[group][round]. `huge_kib` as above.
std::vector<std::vector<double>> read_interleaved(const Options& o, long& huge_kib) {
  std::vector<std::unique_ptr<td::DeviceGroup>> groups;
  for (int g = 0; g < o.groups; ++g) {
    groups.push_back(std::make_unique<td::DeviceGroup>(td::plan_devices(o.devices, 1)));
  }
  std::vector<std::vector<double>> readings(static_cast<size_t>(o.groups));
  for (int r = 0; r < o.readings; ++r) {
    for (int g = 0; g < o.groups; ++g) {
      readings[static_cast<size_t>(g)].push_back(
          td::cache_seconds(*groups[static_cast<size_t>(g)], buffers_of(o)));
      std::this_thread::sleep_for(std::chrono::duration<double>(o.interval));
    }
  }
  huge_kib = huge_page_kib();
  std::vector<double> first, second;
  for (int g = 0; g < o.groups; ++g) {
    const std::vector<double>& mine = readings[static_cast<size_t>(g)];
    const auto half = mine.begin() + static_cast<std::ptrdiff_t>(mine.size() / 2);
    first.push_back(*std::min_element(mine.begin(), half));
    second.push_back(*std::min_element(half, mine.end()));
    std::printf("group %3d: fastest %6.1f us (first half of the rounds %6.1f, second %6.1f)\n", g,
                std::min(first.back(), second.back()) * 1e6, first.back() * 1e6,
                second.back() * 1e6);
  }
  std::printf("rank correlation of the groups' fastest readings, first half against second: %.2f\n",
              rank_correlation(first, second));
  return readings;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  if (o.interleave && o.readings < 2) {
    std::fprintf(stderr, "reader_bench: --interleave needs --readings 2 or more (two halves)\n");
    return 2;
  }
  // [group][reading], seconds
  long huge_kib = -1;
  const std::vector<std::vector<double>> readings =
      o.interleave ? read_interleaved(o, huge_kib) : read_one_after_another(o, huge_kib);
  const double fastest = td::best_cache_seconds(o.devices);
  std::printf("buffers: %s; memory on huge pages with the groups alive: %ld KiB\n",
              o.huge_pages ? "huge pages asked for" : "the tools' own", huge_kib);
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
    const nlohmann::json out = {
        {"groups", o.groups},        {"devices", o.devices},       {"readings", o.readings},
        {"interval", o.interval},    {"interleave", o.interleave}, {"huge_pages", o.huge_pages},
        {"huge_page_kib", huge_kib}, {"fastest", fastest},         {"seconds", readings}};
    tandem::write_file_atomically(o.json, out.dump(1) + "\n");
  }
  return 0;
}
