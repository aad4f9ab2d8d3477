#pragma once
/// The matrix `nvidia-smi topo -m` prints, read into cells: the syntax half of the nvidia-smi
/// importer (nvidia_smi_topo.h turns the cells into a topology).
///
/// Accepted: a header line of device columns (`GPU0 GPU1 ... NIC0 ...`, or NIC names such as
/// `mlx5_0` from older drivers) followed by `CPU Affinity`, `NUMA Affinity`, `GPU NUMA ID`;
/// one row per device, in any order; entries `X`, `NV<n>`, `PIX`, `PXB`, `PHB`, `NODE`, `SYS`
/// (`SOC`, the old name of `SYS`); the `Legend:` and `NIC Legend:` blocks. Columns may be
/// separated by tabs or spaces; lines before the header (a shell prompt) are skipped, and
/// terminal escape sequences count as blanks.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/input_error.h"

namespace mpsim::topology::import {

/// One matrix entry, in nvidia-smi's words.
enum class TopoEntry : std::uint8_t { Self, NvLink, Pix, Pxb, Phb, Node, Sys };
[[nodiscard]] std::string_view to_string(TopoEntry e) noexcept;

struct TopoCell {
  TopoEntry entry = TopoEntry::Self;
  int nvlinks = 0;  ///< the n of `NV<n>`
  int line = 0;     ///< where the entry is written (1-based)
  int column = 0;

  /// "NV12", "PIX", ...
  [[nodiscard]] std::string text() const;
};

enum class TopoDeviceKind : std::uint8_t { Gpu, Nic };

struct TopoDevice {
  std::string label;       ///< the column header: `GPU3`, `NIC0`, `mlx5_0`
  TopoDeviceKind kind = TopoDeviceKind::Gpu;
  int index = 0;           ///< among devices of its kind, in column order
  std::string os_name;     ///< NICs: the `NIC Legend:` name (`mlx5_0`), else the label
  /// GPUs: what identifies their NUMA node: the `NUMA Affinity` value, else the `CPU Affinity`
  /// value; empty when the matrix has neither or says `N/A`.
  std::string numa_key;
  int line = 0;            ///< the device's row
};

struct TopoMatrix {
  std::string source_name;
  int header_line = 0;
  std::vector<TopoDevice> devices;            ///< in column order
  std::vector<std::vector<TopoCell>> cells;   ///< cells[row][column], rows in column order
  int gpus = 0;
  int nics = 0;

  [[nodiscard]] SourceLocation where(const TopoCell& c) const { return {source_name, c.line, c.column}; }
  /// The field name errors use: "row GPU3, column GPU5".
  [[nodiscard]] std::string field(std::size_t row, std::size_t column) const;
};

/// Parses the matrix. Throws InputError naming `source_name`, the line and column: when there is
/// no header line, a row is missing, short (ragged) or long, an entry is unknown (`NV?`), `X` is
/// off the diagonal, a NIC shows NVLink, or the matrix is not symmetric.
[[nodiscard]] TopoMatrix parse_topo_matrix(std::string_view text, std::string_view source_name);

}  // namespace mpsim::topology::import
