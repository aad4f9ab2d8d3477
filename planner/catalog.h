#pragma once
/// A catalogue of instance types to rent (`mpsim plan --catalog FILE`; docs/budget.md, docs/formats.md
/// "Catalogue"): for each type its node (a topology file's), its price per instance-hour and how many
/// are available. The reader turns the YAML into these values once; the catalogue search
/// (catalog_search.h) builds each job's cluster from them.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/input_error.h"
#include "sim/core/yaml_field_fwd.h"
#include "sim/topology/cluster.h"
#include "sim/topology/topology_spec.h"

namespace mpsim::planner {

/// An amount of money in a currency ("98.32 USD").
struct Money {
  double amount = 0;
  std::string currency;  ///< an ISO 4217 code: three capital letters
};

/// "98.32 USD", "2e6 USD": a number, a space (or none) and a three-letter currency code. The error,
/// when the text is not one, says what is expected; nothing otherwise.
[[nodiscard]] std::optional<std::string> money_error(const std::string& text);
/// Precondition: money_error(text) is empty.
[[nodiscard]] Money parse_money(const std::string& text);

/// "1,234,567 USD": an amount as a report shows it, whole units with thousands separators.
[[nodiscard]] std::string money_text(double amount, const std::string& currency);

/// One instance type.
struct CatalogInstance {
  std::string name;              ///< unique in its catalogue
  std::string node_file;         ///< the topology file whose node it is, as resolved
  topology::TopologySpec node;   ///< that file's spec: one node template (its fabric: the instance's, below)
  double price_per_hour = 0;     ///< per instance-hour, in the catalogue's currency
  int available = 0;             ///< instances that may be rented at once
  int gpus_per_instance = 0;
  bool own_fabric = false;       ///< the entry gives the fabric (not its node file)
  SourceLocation where;          ///< the entry, for later errors
};

struct Catalog {
  std::string file;
  std::string currency;  ///< every price's
  std::vector<CatalogInstance> instances;  ///< in the file's order
};

/// Reads a catalogue (docs/formats.md, "Catalogue"). `node_from` is resolved against the catalogue's
/// folder first, then against each of `topology_dirs` in order (the CLI passes the shipped
/// topologies/). Throws InputError at the file, line and field of a malformed entry: an unknown or
/// unreadable node file, one that describes more than one kind of node, a price that is not a positive
/// amount, a currency other than the first entry's, an `available` below 1, a name given twice.
[[nodiscard]] Catalog load_catalog_file(const std::filesystem::path& path,
                                        const std::vector<std::filesystem::path>& topology_dirs = {});
/// The same from a parsed document whose `node_from` files are looked for in `folder`, then `topology_dirs`.
[[nodiscard]] Catalog load_catalog(const Field& root, const std::filesystem::path& folder,
                                   const std::vector<std::filesystem::path>& topology_dirs);

/// The cluster of `count` instances of `instance`: its node file's node `count` times, joined by the
/// instance's fabric (the catalogue entry's `fabric`, else the node file's, else a single switch
/// over the instances' NICs, as docs/formats.md says). Named "COUNTx NAME". Throws InputError as
/// topology::build_cluster does. Precondition: count >= 1.
[[nodiscard]] topology::Cluster instance_cluster(const CatalogInstance& instance, int count);

/// The cluster of `first_count` instances of `first` then `second_count` of `second` (a node_groups
/// cluster of two GPU kinds, docs/mixed-clusters.md), joined by the first type's fabric (else the
/// second's, else a single switch). Named "Ax FIRST + Bx SECOND". Preconditions: both counts >= 1.
[[nodiscard]] topology::Cluster two_instance_cluster(const CatalogInstance& first, int first_count,
                                                     const CatalogInstance& second, int second_count);

}  // namespace mpsim::planner
