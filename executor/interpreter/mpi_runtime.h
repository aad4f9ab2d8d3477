#pragma once
/// The MPI process environment, kept out of the command line code: initialisation, the world, and
/// the abort that ends every rank of the job.
#include <string>

namespace mpsim::executor {

/// MPI_Init_thread (funneled) on construction, MPI_Finalize on destruction.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] int size() const noexcept { return size_; }
  /// Ends the whole job (every rank) with `code`; never returns.
  [[noreturn]] static void abort(int code);

 private:
  int rank_ = 0;
  int size_ = 1;
};

/// The rank the launcher gave this process, from SLURM_PROCID, OMPI_COMM_WORLD_RANK or PMI_RANK,
/// for messages before MPI is up; empty when none is set.
[[nodiscard]] std::string launcher_rank();

}  // namespace mpsim::executor
