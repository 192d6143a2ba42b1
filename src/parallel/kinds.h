// The fixed sets of choices a fit makes, as enums. The public API and the CLI take Keras-like
// strings; they are parsed here once (a ConfigError lists the valid names), and everything
// inside uses the enums.
#pragma once

#include <string>

namespace tandem::detail {

enum class StrategyKind { mirrored, host };
enum class ReducerKind { sharded, allreduce };
enum class GradCompression { none, bf16 };
enum class CheckpointUnit { epoch, step };
// How the cost model (tandem advise) reduces gradients between devices.
enum class AllreduceKind { ring, tree };

StrategyKind parse_strategy(const std::string& name);             // mirrored | host
ReducerKind parse_reducer(const std::string& name);               // sharded | allreduce
GradCompression parse_grad_compression(const std::string& name);  // none | bf16
CheckpointUnit parse_checkpoint_unit(const std::string& name);    // epoch | step
AllreduceKind parse_allreduce(const std::string& name);           // ring | tree

const char* name_of(StrategyKind kind);
const char* name_of(ReducerKind kind);
const char* name_of(GradCompression kind);
const char* name_of(CheckpointUnit kind);
const char* name_of(AllreduceKind kind);

}  // namespace tandem::detail
