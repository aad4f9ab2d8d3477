#include "planner/catalog_search.h"

#include <algorithm>
#include <tuple>

#include <fmt/format.h>

namespace mpsim::planner {
namespace {

double cost_of(const CatalogOffer& o) { return *o.job.run->cost; }
TimeNs wall_of(const CatalogOffer& o) { return o.job.run->wall_time; }

}  // namespace

std::vector<int> instance_counts(int available, const std::vector<int>& fixed) {
  if (!fixed.empty()) {
    std::vector<int> within;
    for (const int c : fixed) {
      if (c >= 1 && c <= available) within.push_back(c);
    }
    std::sort(within.begin(), within.end());
    within.erase(std::unique(within.begin(), within.end()), within.end());
    return within;
  }
  // An instance is a node of one GPU here: the node branch of cost_job_sizes gives whole instances.
  return cost_job_sizes(available, available, std::nullopt);
}

double gpu_hour_price(const CatalogInstance& instance) {
  return instance.price_per_hour / static_cast<double>(instance.gpus_per_instance);
}

std::optional<std::size_t> choose_offer(const std::vector<CatalogOffer>& offers, const CatalogLimits& limits) {
  std::optional<std::size_t> chosen;
  for (std::size_t i = 0; i < offers.size(); ++i) {
    const CatalogOffer& o = offers[i];
    if (!o.job.run) continue;
    if (limits.deadline && wall_of(o) > *limits.deadline) continue;
    if (limits.budget && cost_of(o) > *limits.budget) continue;
    if (!chosen) {
      chosen = i;
      continue;
    }
    const CatalogOffer& best = offers[*chosen];
    // Strictly better only: of equals, the first stays.
    const bool better = limits.budget ? std::tuple(wall_of(o), cost_of(o)) < std::tuple(wall_of(best), cost_of(best))
                                      : std::tuple(cost_of(o), wall_of(o)) < std::tuple(cost_of(best), wall_of(best));
    if (better) chosen = i;
  }
  return chosen;
}

std::vector<std::size_t> cost_time_frontier(const std::vector<CatalogOffer>& offers) {
  std::vector<std::size_t> front;
  for (std::size_t i = 0; i < offers.size(); ++i) {
    if (!offers[i].job.run) continue;
    bool beaten = false;
    for (std::size_t j = 0; j < offers.size() && !beaten; ++j) {
      if (j == i || !offers[j].job.run) continue;
      const bool no_worse = cost_of(offers[j]) <= cost_of(offers[i]) && wall_of(offers[j]) <= wall_of(offers[i]);
      const bool better = cost_of(offers[j]) < cost_of(offers[i]) || wall_of(offers[j]) < wall_of(offers[i]);
      // An equal point earlier in the list stands for this one.
      beaten = no_worse && (better || j < i);
    }
    if (!beaten) front.push_back(i);
  }
  std::stable_sort(front.begin(), front.end(), [&](std::size_t a, std::size_t b) {
    return std::tuple(cost_of(offers[a]), wall_of(offers[a])) < std::tuple(cost_of(offers[b]), wall_of(offers[b]));
  });
  return front;
}

topology::Cluster offer_cluster(const Catalog& catalog, const CatalogOffer& offer) {
  const CatalogInstance& first = catalog.instances.at(offer.instance);
  if (!offer.second) return instance_cluster(first, offer.count);
  return two_instance_cluster(first, offer.count, catalog.instances.at(*offer.second), offer.second_count);
}

CatalogSearchResult run_catalog_search(const Catalog& catalog,
                                       const std::function<JobSearch(topology::Cluster)>& search_of,
                                       const training::TrainingRequest& request, const CatalogLimits& limits,
                                       bool mix_types,
                                       const std::function<std::optional<std::string>(const topology::Cluster&)>& unusable,
                                       const std::vector<int>& counts) {
  CatalogSearchResult out;
  std::vector<bool> usable(catalog.instances.size(), true);
  for (std::size_t t = 0; t < catalog.instances.size(); ++t) {
    const CatalogInstance& instance = catalog.instances[t];
    std::optional<std::string> why;
    if (instance_counts(instance.available, counts).empty()) {
      why = fmt::format("none of the instance counts asked for is within its {} available", instance.available);
    } else if (unusable) {
      why = unusable(instance_cluster(instance, 1));
    }
    if (why) {
      usable[t] = false;
      out.skipped.push_back({t, std::move(*why)});
    }
  }
  for (std::size_t t = 0; t < catalog.instances.size(); ++t) {
    if (!usable[t]) continue;
    const CatalogInstance& instance = catalog.instances[t];
    const int per = instance.gpus_per_instance;
    std::vector<int> sizes;
    for (const int count : instance_counts(instance.available, counts)) sizes.push_back(count * per);
    training::TrainingRequest priced = request;
    priced.gpu_hour_price = gpu_hour_price(instance);
    // The cost search of this type alone; the choice across types is made below, on cost.
    const CostSearchResult found = run_cost_search(
        sizes, [&](int gpus) { return search_of(instance_cluster(instance, gpus / per)); }, priced, std::nullopt);
    for (const JobSizeResult& job : found.sizes) out.offers.push_back({t, job.gpus / per, job, std::nullopt, 0});
  }
  if (mix_types) {
    for (std::size_t a = 0; a < catalog.instances.size(); ++a) {
      for (std::size_t b = a + 1; b < catalog.instances.size(); ++b) {
        if (!usable[a] || !usable[b]) continue;
        const CatalogInstance& first = catalog.instances[a];
        const CatalogInstance& second = catalog.instances[b];
        for (const int ca : instance_counts(first.available, counts)) {
          for (const int cb : instance_counts(second.available, counts)) {
            const int gpus = ca * first.gpus_per_instance + cb * second.gpus_per_instance;
            training::TrainingRequest priced = request;
            priced.gpu_hour_price = (ca * first.price_per_hour + cb * second.price_per_hour) / gpus;
            const CostSearchResult found = run_cost_search(
                {gpus}, [&](int) { return search_of(two_instance_cluster(first, ca, second, cb)); }, priced,
                std::nullopt);
            out.offers.push_back({a, ca, found.sizes.front(), b, cb});
          }
        }
      }
    }
  }
  out.chosen = choose_offer(out.offers, limits);
  out.frontier = cost_time_frontier(out.offers);
  return out;
}

}  // namespace mpsim::planner
