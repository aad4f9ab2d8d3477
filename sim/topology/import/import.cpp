#include "sim/topology/import/import.h"

#include "sim/core/text_file.h"

namespace mpsim::topology::import {

ImportFormat sniff_import_format(std::string_view text) noexcept {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  const auto first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && text[first] == '<' ? ImportFormat::NcclXml : ImportFormat::NvidiaSmiTopo;
}

TopologySpec import_topology_file(const std::filesystem::path& path, const ImportOptions& options) {
  const std::string source_name = path.string();
  const std::string text = read_text_file(path, source_name);
  switch (sniff_import_format(text)) {
    case ImportFormat::NcclXml: return import_nccl_xml(text, source_name, options);
    case ImportFormat::NvidiaSmiTopo: return import_nvidia_smi_topo(text, source_name, options);
  }
  return import_nvidia_smi_topo(text, source_name, options);
}

}  // namespace mpsim::topology::import
