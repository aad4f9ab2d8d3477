#include "planner/catalog.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <system_error>

#include <fmt/format.h>

#include "sim/core/yaml_field.h"
#include "sim/topology/topology_loader.h"

namespace mpsim::planner {
namespace {

constexpr const char* kMoneyForm = "expected an amount and its currency code, such as \"98.32 USD\" or \"2e6 USD\"";

/// The number and the code of a money text, or nothing.
std::optional<Money> split_money(const std::string& text) {
  const auto space = text.find_last_of(' ');
  std::string number = space == std::string::npos ? text.substr(0, text.size() >= 3 ? text.size() - 3 : 0)
                                                  : text.substr(0, space);
  const std::string code = space == std::string::npos ? text.substr(number.size()) : text.substr(space + 1);
  while (!number.empty() && number.back() == ' ') number.pop_back();
  if (code.size() != 3) return std::nullopt;
  for (const char c : code) {
    if (std::isupper(static_cast<unsigned char>(c)) == 0) return std::nullopt;
  }
  double amount = 0;
  const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), amount);
  if (number.empty() || error != std::errc() || end != number.data() + number.size() || !std::isfinite(amount)) {
    return std::nullopt;
  }
  return Money{amount, code};
}

/// The file `node_from` names: beside the catalogue, else in the first of `dirs` that holds it.
std::filesystem::path resolve_node_file(const Field& from, const std::filesystem::path& folder,
                                        const std::vector<std::filesystem::path>& dirs) {
  const std::string name = from.as_string();
  std::vector<std::filesystem::path> tried{folder / name};
  for (const auto& dir : dirs) tried.push_back(dir / name);
  std::string looked;
  for (const auto& path : tried) {
    std::error_code refused;  // a name the file system refuses (too long, say) is not found either
    if (std::filesystem::is_regular_file(path, refused)) return path;
    looked += (looked.empty() ? "" : ", ") + path.string();
  }
  from.fail(fmt::format("no such topology file (looked for {})", looked));
}

CatalogInstance load_instance(const Field& entry, const std::filesystem::path& folder,
                              const std::vector<std::filesystem::path>& dirs) {
  entry.expect_keys({"name", "node_from", "price_per_hour", "available", "fabric"});
  CatalogInstance instance;
  instance.where = entry.location();
  instance.name = entry.require("name").as_string();
  if (instance.name.empty()) entry.require("name").fail("an instance type needs a name");

  const Field from = entry.require("node_from");
  const std::filesystem::path node_file = resolve_node_file(from, folder, dirs);
  instance.node_file = node_file.string();
  const YamlDocument node_doc = YamlDocument::load(node_file);
  instance.node = topology::load_topology_spec(node_doc.root());
  if (instance.node.templates.size() != 1 || instance.node.nodes.size() != 1) {
    from.fail(fmt::format("'{}' must describe one kind of node (an instance is one node)", instance.node_file));
  }
  const topology::NodeSpec& node = instance.node.templates.begin()->second;
  instance.gpus_per_instance = node.gpus;

  const Field price = entry.require("price_per_hour");
  const std::string price_text = price.as_string();
  if (const auto why = money_error(price_text)) price.fail(*why);
  const Money money = parse_money(price_text);
  if (!(money.amount > 0)) price.fail("a price per hour must be positive");
  instance.price_per_hour = money.amount;

  const Field available = entry.require("available");
  const std::int64_t count = available.as_int();
  if (count < 1 || count > 100000) available.fail("the instances available must be between 1 and 100000");
  instance.available = static_cast<int>(count);
  if (instance.available > 1 && node.nics.count == 0) {
    available.fail(fmt::format("a job of several instances needs NICs in the node, and '{}' has none",
                               instance.node_file));
  }

  if (auto fabric = entry.get("fabric")) {
    instance.node.fabric = topology::load_fabric_spec(*fabric);
    instance.own_fabric = true;
  } else if (!instance.node.fabric && node.nics.count > 0) {
    // Nothing says how the instances meet: one non-blocking switch over their NICs (docs/formats.md).
    // A node without NICs is a job of one instance (checked above), which needs no fabric.
    topology::FabricSpec single;
    single.origin = {entry.location(), entry.path()};
    instance.node.fabric = single;
  }
  instance.node.name = "{nodes}x " + instance.name;
  instance.node.file = instance.node_file;
  return instance;
}

}  // namespace

std::optional<std::string> money_error(const std::string& text) {
  if (split_money(text)) return std::nullopt;
  return std::string(kMoneyForm);
}

Money parse_money(const std::string& text) { return *split_money(text); }

std::string money_text(double amount, const std::string& currency) {
  const std::string digits = fmt::format("{:.0f}", std::abs(amount));
  std::string grouped = amount < 0 ? "-" : "";
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) grouped += ',';
    grouped += digits[i];
  }
  return grouped + " " + currency;
}

Catalog load_catalog_file(const std::filesystem::path& path, const std::vector<std::filesystem::path>& topology_dirs) {
  const YamlDocument doc = YamlDocument::load(path);
  return load_catalog(doc.root(), path.parent_path(), topology_dirs);
}

Catalog load_catalog(const Field& root, const std::filesystem::path& folder,
                     const std::vector<std::filesystem::path>& topology_dirs) {
  root.expect_keys({"instances"});
  Catalog catalog;
  catalog.file = root.file();
  const Field list = root.require("instances");
  const std::vector<Field> entries = list.items();
  if (entries.empty()) list.fail("a catalogue needs at least one instance type");
  for (const Field& entry : entries) {
    CatalogInstance instance = load_instance(entry, folder, topology_dirs);
    const Field price = entry.require("price_per_hour");
    const std::string currency = parse_money(price.as_string()).currency;
    if (catalog.currency.empty()) catalog.currency = currency;
    if (currency != catalog.currency) {
      price.fail(fmt::format("every price of a catalogue is in one currency: this one is in {}, the first in {}",
                             currency, catalog.currency));
    }
    for (const CatalogInstance& earlier : catalog.instances) {
      if (earlier.name == instance.name) {
        entry.require("name").fail(
            fmt::format("instance type '{}' is given twice (first at line {})", instance.name, earlier.where.line));
      }
    }
    catalog.instances.push_back(std::move(instance));
  }
  return catalog;
}

topology::Cluster instance_cluster(const CatalogInstance& instance, int count) {
  topology::TopologySpec spec = instance.node;
  spec.nodes.front().count = count;
  return topology::build_cluster(spec);
}

topology::Cluster two_instance_cluster(const CatalogInstance& first, int first_count, const CatalogInstance& second,
                                       int second_count) {
  topology::TopologySpec spec = first.node;
  spec.name = fmt::format("{}x {} + {}x {}", first_count, first.name, second_count, second.name);
  spec.nodes.front().count = first_count;
  // The second type's node under a name of its own, after the first's (node_groups' order).
  const std::string second_template = spec.templates.begin()->first + "+" + second.name;
  spec.templates.emplace(second_template, second.node.templates.begin()->second);
  spec.nodes.push_back({second_template, second_count, second.node.nodes.front().origin});
  for (const topology::GpuKind& kind : second.node.custom_gpu_kinds) {
    const bool known = std::any_of(spec.custom_gpu_kinds.begin(), spec.custom_gpu_kinds.end(),
                                   [&](const topology::GpuKind& k) { return k.id == kind.id; });
    if (!known) spec.custom_gpu_kinds.push_back(kind);
  }
  if (!spec.fabric) spec.fabric = second.node.fabric;
  return topology::build_cluster(spec);
}

}  // namespace mpsim::planner
