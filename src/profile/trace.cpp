#include "profile/trace.h"

#include <atomic>
#include <nlohmann/json.hpp>

namespace tandem::detail {
namespace {

std::atomic<Tracer*> g_active{nullptr};
std::atomic<uint64_t> g_generation{0};

struct ThreadLane {
  uint64_t generation = 0;  // of the tracer the lane belongs to
  TraceLane* lane = nullptr;
  std::string name;
};
thread_local ThreadLane t_lane;

}  // namespace

Tracer::Tracer() : origin_(Clock::now()), generation_(++g_generation) {
  Tracer* expected = nullptr;
  g_active.compare_exchange_strong(expected, this);  // one tracer at a time; others record nothing
}

Tracer::~Tracer() {
  Tracer* self = this;
  g_active.compare_exchange_strong(self, nullptr);
}

Tracer* Tracer::active() {
  return g_active.load(std::memory_order_acquire);
}

TraceLane* Tracer::lane_for(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto lane = std::make_unique<TraceLane>();
  lane->id = static_cast<int>(lanes_.size());
  lane->name = name.empty() ? "thread " + std::to_string(lane->id) : name;
  lane->events.reserve(4096);
  lanes_.push_back(std::move(lane));
  return lanes_.back().get();
}

TraceLane* Tracer::lane() {
  Tracer* tracer = active();
  if (tracer == nullptr) return nullptr;
  if (t_lane.generation != tracer->generation_) {
    t_lane.lane = tracer->lane_for(t_lane.name);
    t_lane.generation = tracer->generation_;
  }
  return t_lane.lane;
}

void Tracer::name_thread(const std::string& name) {
  t_lane.name = name;
  if (t_lane.lane != nullptr && active() != nullptr && t_lane.generation == g_generation.load()) {
    std::lock_guard lock(active()->mutex_);
    t_lane.lane->name = name;
  }
}

void Tracer::record(const char* name, const char* category, Clock::time_point start,
                    int64_t bytes) {
  const Tracer* tracer = active();
  TraceLane* lane = Tracer::lane();
  if (lane == nullptr || tracer == nullptr) return;
  const auto end = Clock::now();
  lane->events.push_back(
      {name, category,
       std::chrono::duration_cast<std::chrono::nanoseconds>(start - tracer->origin_).count(),
       std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count(), bytes});
}

int64_t Tracer::event_count() const {
  std::lock_guard lock(mutex_);
  int64_t n = 0;
  for (const auto& lane : lanes_) n += static_cast<int64_t>(lane->events.size());
  return n;
}

std::string Tracer::events_json(int pid, const std::string& process_name) const {
  std::lock_guard lock(mutex_);
  nlohmann::json events = nlohmann::json::array();
  events.push_back(
      {{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", process_name}}}});
  for (const auto& lane : lanes_) {
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"tid", lane->id},
                      {"args", {{"name", lane->name}}}});
    for (const TraceEvent& e : lane->events) {
      nlohmann::json event = {{"name", e.name},
                              {"cat", e.category},
                              {"ph", "X"},
                              {"pid", pid},
                              {"tid", lane->id},
                              {"ts", static_cast<double>(e.start_ns) / 1e3},
                              {"dur", static_cast<double>(e.duration_ns) / 1e3}};
      if (e.bytes >= 0) event["args"] = {{"bytes", e.bytes}};
      events.push_back(std::move(event));
    }
  }
  return events.dump();
}

void trace_scope(const char* name, const char* category, Clock::time_point start) {
  Tracer::record(name, category, start);
}

void trace_bucket(const char* name, Clock::time_point start, int64_t bytes) {
  Tracer::record(name, "allreduce", start, bytes);
}

bool tracing() {
  return g_active.load(std::memory_order_relaxed) != nullptr;
}

std::string trace_file_json(const std::vector<std::string>& event_arrays) {
  nlohmann::json all = nlohmann::json::array();
  for (const auto& text : event_arrays) {
    for (auto& e : nlohmann::json::parse(text)) all.push_back(std::move(e));
  }
  return nlohmann::json{{"traceEvents", all}, {"displayTimeUnit", "ms"}}.dump() + "\n";
}

}  // namespace tandem::detail
