#pragma once
/// The one entry point of `mpsim topo import FILE`: reads a file, tells NCCL XML from
/// `nvidia-smi topo -m` text, and imports it. The importers themselves are in nvidia_smi_topo.h
/// and nccl_xml.h; the rules and defaults are in docs/formats/import.md.
#include <cstdint>
#include <filesystem>
#include <string_view>

#include "sim/topology/import/import_options.h"
#include "sim/topology/import/nccl_xml.h"
#include "sim/topology/import/nvidia_smi_topo.h"
#include "sim/topology/topology_spec.h"

namespace mpsim::topology::import {

enum class ImportFormat : std::uint8_t { NvidiaSmiTopo, NcclXml };

/// NCCL XML when the first thing after whitespace (and a byte-order mark) is `<`, which also
/// covers a leading `<?xml ...?>`; otherwise nvidia-smi text.
[[nodiscard]] ImportFormat sniff_import_format(std::string_view text) noexcept;

/// Reads `path` with read_text_file (its size and text checks apply) and imports it as one node.
/// Errors name the file as given. Throws InputError.
[[nodiscard]] TopologySpec import_topology_file(const std::filesystem::path& path, const ImportOptions& options);

}  // namespace mpsim::topology::import
