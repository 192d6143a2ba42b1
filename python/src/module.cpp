// NB_MODULE entry point of tandem._tandem.
#include "bindings.h"

NB_MODULE(_tandem, m) {
  using namespace tandem::python;
  m.doc() = "tandem's C++ engine; use it through tandem.keras";
  bind_errors(m);
  bind_arrays(m);
  bind_layers(m);
  bind_callbacks(m);
  bind_model(m);
  bind_datasets(m);
  bind_runtime(m);
}
