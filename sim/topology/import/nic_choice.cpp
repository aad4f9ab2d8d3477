#include "sim/topology/import/nic_choice.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/core/input_error.h"

namespace mpsim::topology::import {

NicChoice choose_nics(const std::vector<FoundNic>& nics, const ImportOptions& options) {
  NicChoice choice;
  choice.keep.assign(nics.size(), true);
  for (const std::string& name : options.exclude_nics) {
    const auto it = std::find_if(nics.begin(), nics.end(),
                                 [&](const FoundNic& n) { return n.label == name || n.os_name == name; });
    if (it == nics.end()) {
      std::string known;
      for (const FoundNic& n : nics) {
        known += fmt::format("{}{}", known.empty() ? "" : ", ", n.label == n.os_name ? n.label : n.label + " = " + n.os_name);
      }
      throw InputError({"--exclude-nic " + name, 0, 0}, "",
                       fmt::format("no NIC is called '{}' (the input has {})", name, known.empty() ? "none" : known));
    }
    choice.keep[static_cast<std::size_t>(it - nics.begin())] = false;
  }
  std::vector<std::string> off_switch;
  std::vector<std::string> excluded;
  const bool rails_known =
      std::any_of(nics.begin(), nics.end(), [](const FoundNic& n) { return n.shares_switch_with_gpu; });
  for (std::size_t i = 0; i < nics.size(); ++i) {
    if (!choice.keep[i]) {
      excluded.push_back(nics[i].os_name);
    } else if (rails_known && !options.all_nics && !nics[i].shares_switch_with_gpu) {
      choice.keep[i] = false;
      off_switch.push_back(nics[i].os_name);
    }
  }
  if (!off_switch.empty()) {
    choice.note = fmt::format(
        "Left out as storage or front-end NICs: {} (no PCIe switch shared with a GPU, unlike the other NICs; "
        "--all-nics keeps them).",
        fmt::join(off_switch, ", "));
  }
  if (!excluded.empty()) {
    choice.note += fmt::format("{}Left out as asked (--exclude-nic): {}.", choice.note.empty() ? "" : " ",
                               fmt::join(excluded, ", "));
  }
  return choice;
}

}  // namespace mpsim::topology::import
