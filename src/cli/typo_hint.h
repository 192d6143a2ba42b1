// "did you mean --epochs?": the nearest option or subcommand for a word the parser refused.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace tandem::cli {

// The candidate closest to `word` by edit distance, or "" when none is close (more than a
// third of the word's letters, at least 2, would have to change).
std::string nearest(const std::string& word, const std::vector<std::string>& candidates);

// After a failed parse of argv by `app`: "; did you mean X?" for the first unknown option of
// the subcommand given (or an unknown subcommand), "" when there is nothing to suggest.
std::string typo_hint(const CLI::App& app, int argc, char** argv);

}  // namespace tandem::cli
