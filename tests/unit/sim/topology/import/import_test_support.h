#pragma once
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "sim/core/input_error.h"
#include "sim/topology/import/import.h"
#include "sim/topology/route_table.h"

namespace mpsim::topology::import::testing {

inline std::string data_path(const std::string& name) {
  return std::string(MPSIM_SOURCE_DIR) + "/tests/data/import/" + name;
}

/// `all_nics`: keep the storage and front-end NICs too (nic_choice.h).
inline TopologySpec import_sample(const std::string& name, const std::string& gpu_kind = {}, bool all_nics = false) {
  ImportOptions options;
  options.gpu_kind = gpu_kind;
  options.all_nics = all_nics;
  return import_topology_file(data_path(name), options);
}

/// The InputError message `fn` throws, or "<no error>".
template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  }
  return "<no error>";
}

/// The route between two named devices; fails the test when either is missing or unreachable.
inline Route route(const Cluster& cluster, const std::string& src, const std::string& dst) {
  const auto a = cluster.find(src);
  const auto b = cluster.find(dst);
  if (!a || !b) {
    ADD_FAILURE() << "no device " << (a ? dst : src);
    return {};
  }
  const auto r = find_route(cluster, *a, *b);
  if (!r) {
    ADD_FAILURE() << "no route " << src << " -> " << dst;
    return {};
  }
  return *r;
}

inline std::string class_of(const Cluster& cluster, const std::string& src, const std::string& dst) {
  return std::string(to_string(route(cluster, src, dst).path_class));
}

inline double gbps(const Route& r) { return r.bandwidth.in_bytes_per_sec() / 1e9; }

inline const NodeSpec& only_node(const TopologySpec& spec) {
  EXPECT_EQ(spec.templates.size(), 1u);
  EXPECT_EQ(spec.nodes.size(), 1u);
  EXPECT_EQ(spec.nodes.front().count, 1);
  return spec.templates.begin()->second;
}

}  // namespace mpsim::topology::import::testing
