#pragma once
/// Which NICs of an imported node are training rails. A node often has NICs that carry no training
/// traffic: the storage or front-end NICs (a DGX A100's mlx5_8/mlx5_9 dual-port card, a DGX H100's
/// two storage ports) hang off the CPU's root complex, while the compute NICs share a PCIe switch with
/// a GPU (GPUDirect RDMA, NCCL's PIX/PXB). When some NICs share a switch with a GPU, those that share
/// none are left out; ImportOptions::all_nics keeps them, ImportOptions::exclude_nics leaves out more
/// by name. Both importers ask this, and name what they left out in the topology's `source`.
#include <string>
#include <vector>

#include "sim/topology/import/import_options.h"

namespace mpsim::topology::import {

/// A NIC as an importer found it.
struct FoundNic {
  std::string label;    ///< the input's own name for it: `NIC3` (nvidia-smi), the `<net name>` (XML)
  std::string os_name;  ///< the device name (`mlx5_3`); may equal the label
  bool shares_switch_with_gpu = false;
};

struct NicChoice {
  std::vector<bool> keep;  ///< by the order of the NICs given
  std::string note;        ///< what was left out and why; empty when nothing was
};

/// Throws InputError (at the flag `--exclude-nic NAME`) for a name no NIC has.
[[nodiscard]] NicChoice choose_nics(const std::vector<FoundNic>& nics, const ImportOptions& options);

}  // namespace mpsim::topology::import
