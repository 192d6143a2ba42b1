// Backend's optional operations: a backend that lacks one says so by name.
#include "backend/backend.h"

#include "tandem/error.h"

namespace tandem {
namespace {

[[noreturn]] void missing(const Backend& backend, const char* operation) {
  throw BackendError("backend '" + backend.name() + "' has no " + operation);
}

}  // namespace

void Backend::conv2d_forward(const Window2d&, const float*, const float*, const float*,
                             ActivationKind, float*) {
  missing(*this, "conv2d_forward");
}
void Backend::conv2d_backward_data(const Window2d&, const float*, const float*, float*, bool) {
  missing(*this, "conv2d_backward_data");
}
void Backend::conv2d_backward_weights(const Window2d&, const float*, const float*, float*, float*,
                                      bool) {
  missing(*this, "conv2d_backward_weights");
}
void Backend::pool2d_forward(PoolKind, const Window2d&, const float*, float*, void*) {
  missing(*this, "pool2d_forward");
}
void Backend::pool2d_backward(PoolKind, const Window2d&, const float*, const void*, float*, bool) {
  missing(*this, "pool2d_backward");
}

void Backend::batch_norm_forward(const BatchNormArgs&, bool, float*) {
  missing(*this, "batch_norm_forward");
}
void Backend::batch_norm_backward(const BatchNormArgs&, bool, const float*, float*, bool, float*,
                                  float*, bool) {
  missing(*this, "batch_norm_backward");
}

}  // namespace tandem
