#include <iostream>

#include "parallel/device_group.h"
#include "parallel/strategy.h"
#include "tandem/config.h"
#include "tandem/error.h"

namespace tandem::detail {

std::unique_ptr<Strategy> make_strategy(ModelState& model, const StrategyOptions& o) {
  if (o.devices < 1) throw ConfigError("devices must be >= 1, got " + std::to_string(o.devices));
  const bool processes = o.world != nullptr && o.world->size() > 1;
  if (processes && o.kind == StrategyKind::host) {
    throw ConfigError("the host strategy runs in one process; with " +
                      std::to_string(o.world->size()) + " MPI ranks use mirrored");
  }
  if (o.devices == 1 && o.kind == StrategyKind::mirrored && !o.deterministic && !processes) {
    return make_single_device_strategy(
        model, o.threads_per_device > 0 ? o.threads_per_device : num_threads(), o.make_backend);
  }
  if (o.kind == StrategyKind::host) return make_host_strategy(model, o);
  return make_mirrored_strategy(model, o);
}

}  // namespace tandem::detail
