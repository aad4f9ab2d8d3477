#pragma once
/// Starting the ranks of a command that runs on real processes (`execute`, `profile`): either inside
/// an existing `mpirun` / `srun` job, or by launching `mpirun -np N` of this same command.
#include <string>
#include <vector>

namespace mpsim::executor {

/// Whether this process was started by an MPI launcher (Open MPI, MPICH/Hydra, Slurm with PMI).
[[nodiscard]] bool started_by_mpi_launcher() noexcept;

/// This process's arguments (argv[1..] from /proc/self/cmdline) without `--ranks N` / `--ranks=N`:
/// what each launched rank is given.
[[nodiscard]] std::vector<std::string> own_arguments_without_ranks();

struct LaunchResult {
  int exit_code = 0;      ///< mpirun's status; 1 when it died of a signal
  bool reported = false;  ///< an "mpsim: error:" line was already printed (by a rank or for a dead rank)
  std::string first_other_line;  ///< the first other line mpirun wrote on standard error, for context
};

/// Runs `mpirun -np ranks --oversubscribe [--allow-run-as-root when root] THIS_EXECUTABLE args...`
/// and waits. Standard output passes through; on standard error the ranks' "mpsim:" lines pass
/// through (the first error line only), and mpirun's report of a rank killed by a signal becomes one
/// line, "mpsim: error: rank R died (signal S, NAME)". Throws std::runtime_error when mpirun cannot
/// be started.
[[nodiscard]] LaunchResult run_under_mpirun(int ranks, const std::vector<std::string>& args);

/// The command's exit status after a launch: 0, 2 (bad input, passed through from the ranks) or 1;
/// prints "mpsim: error: the job failed: ..." when the job failed and nothing had said why.
[[nodiscard]] int launch_exit_status(const LaunchResult& result);

}  // namespace mpsim::executor
