// Timeline tracing: every timed scope of a step (phases, layers, each bucket's all-reduce)
// as a Chrome trace event, viewable in Perfetto or chrome://tracing. Events go to the lane
// (trace "thread") of the thread that records them: one per device replica, one for the
// main thread, one for a rank's MPI communication thread; ranks are trace "processes".
// Off (no Tracer active), recording costs one thread-local load and a branch per scope.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "profile/phase_timer.h"

namespace tandem::detail {

struct TraceEvent {
  const char* name;      // a string that outlives the trace: a literal, or a layer's name
  const char* category;  // "phase", "forward", "backward", "allreduce"
  int64_t start_ns, duration_ns;
  int64_t bytes;  // < 0: none
};

// Written only by its thread while tracing; read when the trace is written, after every
// recording thread has finished (the fit has returned from its last step).
struct TraceLane {
  int id = 0;
  std::string name;
  std::vector<TraceEvent> events;
};

class Tracer {
 public:
  Tracer();
  ~Tracer();  // deactivates
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // The active tracer, or null (tracing off).
  static Tracer* active();
  // This thread's lane in the active tracer (made on first use, named by name_thread).
  static TraceLane* lane();
  // Names the calling thread's lane ("device 1", "MPI communication").
  static void name_thread(const std::string& name);
  // Records [start, now) on this thread's lane, when tracing.
  static void record(const char* name, const char* category, Clock::time_point start,
                     int64_t bytes = -1);

  Clock::time_point origin() const { return origin_; }
  void set_origin(Clock::time_point origin) { origin_ = origin; }
  // The events as a JSON array of trace events for process `pid` ("rank 0 on host").
  std::string events_json(int pid, const std::string& process_name) const;
  int64_t event_count() const;

 private:
  TraceLane* lane_for(const std::string& name);

  Clock::time_point origin_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<TraceLane>> lanes_;
  uint64_t generation_;
};

// A whole trace file from the event arrays of every rank.
std::string trace_file_json(const std::vector<std::string>& event_arrays);

}  // namespace tandem::detail
