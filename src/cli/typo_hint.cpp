#include "cli/typo_hint.h"

#include <algorithm>
#include <numeric>

namespace tandem::cli {
namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
  }
  return names;
}

}  // namespace

std::string nearest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, word.size() / 3) + 1;
  for (const std::string& candidate : candidates) {
    const size_t d = edit_distance(word, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

std::string typo_hint(const CLI::App& app, int argc, char** argv) {
  const CLI::App* command = nullptr;
  std::vector<std::string> subcommands;
  for (const CLI::App* sub : app.get_subcommands({})) subcommands.push_back(sub->get_name());
  int i = 1;
  if (argc > 1 && argv[1][0] != '-') {
    const std::string word = argv[1];
    for (const CLI::App* sub : app.get_subcommands({})) {
      if (sub->get_name() == word) command = sub;
    }
    if (!command) {
      const std::string guess = nearest(word, subcommands);
      return guess.empty() ? "" : "; did you mean '" + guess + "'?";
    }
    i = 2;
  }
  const CLI::App& scope = command ? *command : app;
  const std::vector<std::string> known = option_names(scope);
  for (; i < argc; ++i) {
    std::string word = argv[i];
    if (!word.starts_with("--")) continue;
    word = word.substr(0, word.find('='));
    if (std::find(known.begin(), known.end(), word) != known.end()) continue;
    const std::string guess = nearest(word, known);
    return guess.empty() ? "" : "; did you mean " + guess + "?";
  }
  return "";
}

}  // namespace tandem::cli
