#pragma once
/// What the importers need that their inputs do not say. Documented in docs/formats/import.md.
#include <string>
#include <vector>

#include "sim/core/units.h"

namespace mpsim::topology::import {

/// NIC port speed for `nvidia-smi topo -m` input, which shows NICs but not their speed:
/// HDR InfiniBand, 200 Gb/s, the DGX A100's compute NICs (NVIDIA/nccl#1505: mlx5 `speed="200000"`).
inline constexpr BytesPerSec kDefaultNicBandwidth = BytesPerSec::gigabits_per_sec(200);

/// Inter-socket (SMP) bandwidth when neither the user nor the input says:
/// NCCL's model figure for Intel Skylake and later, SKL_QPI_BW = 10 GB/s (NVIDIA/nccl src/graph/topo.h).
inline constexpr BytesPerSec kDefaultSmpBandwidth = BytesPerSec::gigabytes_per_sec(10);

struct ImportOptions {
  /// A built-in GPU kind, by id or alias (`a100-80gb`, `h100`). Required for nvidia-smi text, which
  /// does not name the GPU model; for NCCL XML, needed only when the GPUs' `sm` fits several kinds.
  /// When given, it wins over what the input suggests.
  std::string gpu_kind;
  /// NIC port speed. Zero: nvidia-smi input gets kDefaultNicBandwidth, NCCL XML each `<net speed>`.
  BytesPerSec nic_bandwidth;
  /// CPU-to-CPU link bandwidth. Zero: NCCL XML gets NCCL's figure for the `<cpu>` model (as NCCL's
  /// ncclTopoGetInterCpuBw), nvidia-smi input kDefaultSmpBandwidth.
  BytesPerSec smp_bandwidth;
  /// The topology's `name`. Empty: the source file name without its extensions (`dgx-a100`).
  std::string name;
  /// NICs to leave out, by the input's name for them (`NIC8`, a `<net name>`) or their device name
  /// (`mlx5_8`): nic_choice.h.
  std::vector<std::string> exclude_nics;
  /// Keep NICs that share no PCIe switch with a GPU (by default they are storage or front-end NICs).
  bool all_nics = false;
};

}  // namespace mpsim::topology::import
