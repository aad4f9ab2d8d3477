#include "sim/core/input_error_collector.h"

#include <algorithm>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace mpsim {
namespace {

thread_local InputErrorCollector* active = nullptr;

/// One error for several: "FILE: N errors:" and each in its one-line form on a line of its own.
InputError combined(const std::vector<InputError>& errors) {
  if (errors.size() == 1) return errors.front();
  std::string lines;
  for (const InputError& e : errors) lines += fmt::format("\n  {}", e.what());
  return InputError({errors.front().where().file, 0, 0}, "", fmt::format("{} errors:{}", errors.size(), lines));
}

}  // namespace

InputErrorCollector::InputErrorCollector() noexcept : outer_(active) { active = this; }

InputErrorCollector::~InputErrorCollector() { active = outer_; }

void InputErrorCollector::keep_or_throw(InputError e) {
  if (active == nullptr) throw std::move(e);
  active->kept_.push_back(std::move(e));
  if (active->kept_.size() >= kMaxCollectedErrors) throw combined(active->kept_);
}

namespace {

/// The mapping that holds the field at dotted `path` ("cluster.intra_node" for
/// "cluster.intra_node.bandwith"; "" at the top level).
std::string_view mapping_of(std::string_view path) {
  const auto dot = path.rfind('.');
  return dot == std::string_view::npos ? std::string_view() : path.substr(0, dot);
}

}  // namespace

void InputErrorCollector::throw_with(const InputError& last) {
  if (kept_.empty()) throw last;
  // An error thrown because the collector was full is already the list.
  if (kept_.size() >= kMaxCollectedErrors) throw combined(kept_);
  // Reading that stops in the mapping of a kept unknown field (a required field missing, a section
  // "needed") most likely stops because of it: a misspelt 'bandwith' leaves 'bandwidth' missing. Left out.
  const bool follows = std::any_of(kept_.begin(), kept_.end(), [&](const InputError& kept) {
    const std::string_view mapping = mapping_of(kept.field());
    return last.field() == mapping || mapping_of(last.field()) == mapping;
  });
  if (!follows) kept_.push_back(last);
  throw combined(kept_);
}

void InputErrorCollector::throw_if_any() {
  if (!kept_.empty()) throw combined(kept_);
}

}  // namespace mpsim
