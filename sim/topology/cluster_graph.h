#pragma once
/// The graph of a Cluster: its devices as vertices (by DeviceId) and the links that are up as edges
/// (edge index = LinkId). Only the cluster and the route search include this (Boost.Graph is heavy
/// to compile).
#include <cstdint>

#include <boost/graph/adjacency_list.hpp>

namespace mpsim::topology {

struct ClusterGraph {
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, boost::no_property,
                                      boost::property<boost::edge_index_t, std::uint32_t>>;
  Graph graph;
};

}  // namespace mpsim::topology
