#include "sim/engine/network_model.h"

#include <algorithm>

#include "sim/engine/flow_network.h"

namespace mpsim::engine {

void add_route_usage(const topology::Cluster& cluster, const topology::Route& route, std::vector<Usage>& usage) {
  for (std::size_t i = 0; i < route.links.size(); ++i) {
    const topology::Link& link = cluster.link(route.links[i]);
    const bool forward = link.a == route.hops[i];
    const ResourceId r = route.links[i].value * 2 + (link.duplex == topology::Duplex::Half || forward ? 0u : 1u);
    usage.push_back({r, 1});
  }
}

void merge_usage(std::vector<Usage>& usage) {
  std::sort(usage.begin(), usage.end(), [](const Usage& a, const Usage& b) { return a.resource < b.resource; });
  std::size_t out = 0;
  for (std::size_t i = 0; i < usage.size(); ++i) {
    if (out > 0 && usage[out - 1].resource == usage[i].resource) {
      usage[out - 1].count += usage[i].count;
    } else {
      usage[out++] = usage[i];
    }
  }
  usage.resize(out);
}

std::unique_ptr<NetworkModel> make_network_model(const topology::Cluster& cluster, NetworkModelKind kind) {
  switch (kind) {
    case NetworkModelKind::MaxMinFair:
      return std::make_unique<FlowNetwork>(cluster);
  }
  return std::make_unique<FlowNetwork>(cluster);
}

}  // namespace mpsim::engine
