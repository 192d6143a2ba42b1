#include "advise/calibrate_devices.h"

#include <fmt/core.h>

#include <algorithm>
#include <string>
#include <vector>

#include "advise/allreduce_probe.h"
#include "advise/at_once_probes.h"
#include "advise/host_exchange_probe.h"
#include "parallel/strategy.h"

namespace tandem::detail {

using nlohmann::json;

namespace {

// A measured table in words, for the log and the sources: each entry as `words` puts it, "; "
// between them.
template <typename T, typename Words>
std::string table_words(const std::vector<T>& table, Words words) {
  std::string out;
  for (const T& entry : table) out += (out.empty() ? "" : "; ") + words(entry);
  return out;
}

std::string bf16_words(const std::vector<Bf16LoopSeconds>& loops) {
  return table_words(loops, [](const Bf16LoopSeconds& l) {
    return fmt::format("{} MB {:.2f}/{:.2f}/{:.2f}", 4e-6 * static_cast<double>(l.floats),
                       l.pack * 1e9, l.unpack * 1e9, l.sum * 1e9);
  });
}

std::string contention_words(const std::vector<UpdateContention>& contention) {
  return table_words(contention, [](const UpdateContention& u) {
    return fmt::format("{} KiB {:.2f}/{:.2f}", u.bytes >> 10, u.own, u.shard);
  });
}

std::string host_words(const std::vector<HostExchangeSeconds>& host) {
  return table_words(host, [](const HostExchangeSeconds& e) {
    return fmt::format("{} KiB {:.1f}/{:.1f}", e.bytes >> 10, e.copy * 1e6, e.sum * 1e6);
  });
}

std::string allreduce_words(const std::vector<AllreduceSeconds>& allreduce) {
  return table_words(allreduce, [](const AllreduceSeconds& e) {
    return fmt::format("{} KiB {:.1f}", e.bytes >> 10, e.seconds * 1e6);
  });
}

std::string exchange_words(const std::vector<ExchangeSeconds>& exchange) {
  return table_words(exchange, [](const ExchangeSeconds& e) {
    return fmt::format("{} KiB {:.1f}/{:.1f}", e.bytes >> 10, e.copy * 1e6, e.tree * 1e6);
  });
}

}  // namespace

DeviceProbes probe_devices(int devices, int threads, int64_t probe_bytes, std::ostream& log) {
  DeviceProbes p{.devices = devices, .threads = threads, .probe_bytes = probe_bytes};
  p.share = devices > 1 ? concurrent_memory_share(devices, probe_bytes, 5) : 1.0;
  p.compute_share = devices > 1 ? concurrent_compute_share(devices, 3) : 1.0;
  p.sync = devices > 1 ? device_sync(devices, 5) : DeviceSync{};
  // The bf16 loops on the bucket sizes the communication thread meets, in cache and not.
  for (int64_t floats = int64_t{1} << 16; floats <= int64_t{1} << 24; floats *= 4) {
    p.bf16.bf16_loops.push_back(bf16_loop_seconds(floats, 5));
  }
  // The update on every device at once, at model sizes from inside a core's cache (256 KiB)
  // to beyond the last level (64 MiB).
  if (devices > 1) {
    std::vector<int64_t> sizes;
    for (int64_t b = int64_t{256} << 10; b <= int64_t{64} << 20; b *= 4) sizes.push_back(b);
    p.contention = update_contention(sizes, devices, threads, 7, p.contention_window);
  }
  p.shared_cache = shared_cache_bytes();
  // Deterministic mode's copies and tree on every device at once, each device with its share
  // of the default 4 micro-shards, at gradient sizes from inside a core's cache (256 KiB) to
  // the largest whose buffers fit the shared cache (exchange_sizes).
  p.exchange_shards = std::max(StrategyOptions{}.deterministic_shards / devices, 1);
  if (devices > 1) {
    const std::vector<int64_t> sizes = exchange_sizes(p.shared_cache, devices, p.exchange_shards);
    p.exchange = deterministic_exchange(sizes, devices, p.exchange_shards, 15);
  }
  // The host strategy's weight copy and gradient sum on every device at once, at parameter
  // sizes up to the core's private cache or, beyond it, the shared cache (host_exchange_sizes).
  p.private_cache = private_cache_bytes();
  if (devices > 1) {
    p.host = host_exchange(host_exchange_sizes(p.private_cache, p.shared_cache, devices), devices,
                           threads, 15);
  }
  // The all-reduce reducer's exchange of one bucket on every device at once, at bucket sizes
  // from 4 KiB to 64 MiB (allreduce_sizes).
  if (devices > 1) {
    p.allreduce = allreduce_exchange(allreduce_sizes(devices), devices, threads, 15);
  }
  log << fmt::format(
      "{} cores streaming at once: {:.2f} of one's bandwidth each; computing at once: {:.2f} of "
      "one's GEMM speed each; {} device threads: wake and join {:.1f} us, barrier {:.1f} us\n"
      "bf16 pack/unpack/sum, ns per float: {}\n",
      devices, p.share, p.compute_share, devices, p.sync.fork_join * 1e6, p.sync.barrier * 1e6,
      bf16_words(p.bf16.bf16_loops));
  if (!p.contention.empty()) {
    log << fmt::format(
        "{} devices updating at once, over alone (own copies/shards of one buffer): {}\n  where: "
        "{}\n",
        devices, contention_words(p.contention), p.contention_window.words());
  }
  if (!p.exchange.empty()) {
    log << fmt::format("{} devices' deterministic exchange, us per copy/tree of {} copies: {}\n",
                       devices, p.exchange_shards, exchange_words(p.exchange));
  }
  if (!p.host.empty()) {
    log << fmt::format("{} devices' host copies, us per weight copy/gradient sum: {}\n", devices,
                       host_words(p.host));
  }
  if (!p.allreduce.empty()) {
    log << fmt::format("{} devices' all-reduce of one bucket, us: {}\n", devices,
                       allreduce_words(p.allreduce));
  }
  return p;
}

void add_device_probes(const DeviceProbes& p, json& profile, json& sources) {
  const int devices = p.devices;
  json& device = profile["device"];
  device["concurrent_memory_share"] = p.share;
  device["concurrent_compute_share"] = p.compute_share;
  device["fork_join"] = p.sync.fork_join;
  device["barrier"] = p.sync.barrier;
  json& loops = device["bf16_loops"] = json::array();
  for (const Bf16LoopSeconds& l : p.bf16.bf16_loops) {
    loops.push_back({{"floats", l.floats}, {"pack", l.pack}, {"unpack", l.unpack}, {"sum", l.sum}});
  }
  if (p.shared_cache > 0) device["shared_cache_bytes"] = p.shared_cache;
  if (!p.contention.empty()) {
    json& contention = device["update_contention"] = json::array();
    for (const UpdateContention& u : p.contention) {
      contention.push_back({{"bytes", u.bytes}, {"own", u.own}, {"shard", u.shard}});
    }
    device["update_contention_devices"] = devices;
    if (p.contention_window.recorded()) {
      device["update_contention_window"] = probe_window_json(p.contention_window);
    }
  }
  if (!p.exchange.empty()) {
    json& exchange = device["deterministic_exchange"] = json::array();
    for (const ExchangeSeconds& e : p.exchange) {
      exchange.push_back({{"bytes", e.bytes}, {"copy", e.copy}, {"tree", e.tree}});
    }
    device["deterministic_exchange_devices"] = devices;
    device["deterministic_exchange_shards"] = p.exchange_shards;
  }
  if (!p.host.empty()) {
    json& host = device["host_exchange"] = json::array();
    for (const HostExchangeSeconds& e : p.host) {
      host.push_back({{"bytes", e.bytes}, {"copy", e.copy}, {"sum", e.sum}});
    }
    device["host_exchange_devices"] = devices;
  }
  if (!p.allreduce.empty()) {
    json& allreduce = device["allreduce_exchange"] = json::array();
    for (const AllreduceSeconds& e : p.allreduce) {
      allreduce.push_back({{"bytes", e.bytes}, {"seconds", e.seconds}});
    }
    device["allreduce_exchange_devices"] = devices;
  }
  sources["device.concurrent_memory_share"] = fmt::format(
      "Measured: b += a over {:.1f} MB on each of {} threads at once (the slowest thread), "
      "against one alone; best of 5 rounds of 3 passes each",
      p.probe_bytes / 1e6, devices);
  sources["device.concurrent_compute_share"] = fmt::format(
      "Measured: a one-thread oneDNN GEMM (256 x 4096 x 2048) on each of {} threads "
      "at once (the slowest), against one alone; best of 3 rounds of 2",
      devices);
  sources["device.fork_join, device.barrier"] = fmt::format(
      "Measured: tandem's DeviceGroup of {} one-thread devices running tasks of "
      "0.4 ms, longer than its devices spin and shorter than its caller's spin (wake and "
      "join beyond the tasks, {:.1f} us), and tasks of 20 barrier waits ({:.1f} us per "
      "barrier beyond an empty task), medians of 5 rounds",
      devices, p.sync.fork_join * 1e6, p.sync.barrier * 1e6);
  sources["device.bf16_loops"] = fmt::format(
      "Measured: the bfloat16 loops of MPI gradient compression (parallel/bf16.h: "
      "pack, unpack, sum) on one thread over 2^16 to 2^24 floats, best of 5 "
      "each; ns per float by float32 buffer size: {}",
      bf16_words(p.bf16.bf16_loops));
  if (!p.contention.empty()) {
    sources["device.update_contention"] = fmt::format(
        "Measured: RMSprop's update kernel on a DeviceGroup of {} devices of {} thread{}, each "
        "first writing its gradients and reading the parameters it updates; device 0 alone "
        "updating a whole buffer, every device at once updating its own whole copy (own, over "
        "alone) and its 1/{} of one shared buffer all read (shard, over alone / {}); the devices' "
        "mean timed, medians of 7 rounds, interleaved, each between two hand-offs of the devices' "
        "cores and timed again where they were apart (window_check.h; where: {}). Own/shard by "
        "parameter bytes: {}",
        devices, p.threads, p.threads == 1 ? "" : "s", devices, devices,
        p.contention_window.words(), contention_words(p.contention));
  }
  if (!p.exchange.empty()) {
    sources["device.deterministic_exchange"] = fmt::format(
        "Measured: deterministic mode's exchange (mirrored.cpp, deterministic_gradients) on a "
        "DeviceGroup of {} devices at once, each reading its parameters and writing its "
        "gradients before copying them aside, {} times, then summing the copies in tree_sum; "
        "the devices' mean, medians of 15 rounds. Microseconds per copy/tree by gradient bytes: {}",
        devices, p.exchange_shards, exchange_words(p.exchange));
  }
  if (!p.host.empty()) {
    sources["device.host_exchange"] = fmt::format(
        "Measured: the host strategy's copies (host.cpp) on a DeviceGroup of {} devices of {} "
        "thread{} at once, each reading its weights and writing its gradients, then summing its "
        "1/{} of the {} gradient buffers (tree_sum) and updating the host's weights there "
        "(RMSprop), then, in the next run, copying the host's whole weights; the devices' mean, "
        "medians of 15 rounds, at parameter sizes from 64 KiB up to the larger of the core's "
        "private cache ({}) and the largest size whose {} buffers fit the shared cache ({}), at "
        "most 16 MiB. Not used by the model yet. Microseconds per weight copy/gradient sum by "
        "parameter bytes: {}",
        devices, p.threads, p.threads == 1 ? "" : "s", devices, devices,
        p.private_cache > 0 ? fmt::format("{} bytes", p.private_cache)
                            : std::string("unknown: 1 MiB"),
        2 * devices + 3,
        p.shared_cache > 0 ? fmt::format("{} bytes", p.shared_cache) : std::string("unknown"),
        host_words(p.host));
  }
  if (!p.allreduce.empty()) {
    sources["device.allreduce_exchange"] = fmt::format(
        "Measured: the all-reduce reducer's exchange (grad_reducer.cpp, AllreduceReducer over "
        "shared_memory_communicator.cpp) on a DeviceGroup of {} devices of {} thread{} at once, "
        "each reading its parameters and writing its gradients, then posting them as one bucket "
        "and waiting for it (each summing its 1/{} and copying the sum into the others); the "
        "devices' mean, medians of 15 rounds. Not used by the model yet. Microseconds by bucket "
        "bytes: {}",
        devices, p.threads, p.threads == 1 ? "" : "s", devices, allreduce_words(p.allreduce));
  }
  if (p.shared_cache > 0) {
    sources["device.shared_cache_bytes"] = fmt::format(
        "The system's level 3 cache, which cpu0's cores share ({} bytes: sysfs, "
        "/sys/devices/system/cpu/cpu0/cache)",
        p.shared_cache);
  }
}

}  // namespace tandem::detail
