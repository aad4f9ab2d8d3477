#pragma once
/// Running the mpsim binary from end-to-end tests: exit code, standard output and standard error.
/// Needs the compile definitions MPSIM_SOURCE_DIR and MPSIM_BINARY.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace mpsim::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string repo(const std::string& relative) { return std::string(MPSIM_SOURCE_DIR) + "/" + relative; }

/// A scratch folder of this test process, named after `purpose`.
inline std::filesystem::path scratch(const std::string& purpose) {
  const auto dir = std::filesystem::temp_directory_path() / ("mpsim-" + purpose + "-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

/// Runs `LAUNCHER mpsim ARGS` (already shell-quoted where needed) in the folder `cwd`; the launcher
/// (`mpirun -n 2 ...`) may be empty.
inline CommandResult run_mpsim_with(const std::string& launcher, const std::string& args, const std::string& cwd = ".") {
  const std::string err_file = (scratch("run") / "stderr").string();
  const std::string command =
      "cd '" + cwd + "' && " + launcher + (launcher.empty() ? "" : " ") + std::string(MPSIM_BINARY) + " " + args + " 2>" + err_file;
  CommandResult run;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) run.out.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_file);
  run.err.assign(std::istreambuf_iterator<char>(err), {});
  return run;
}

/// Runs `mpsim ARGS` (already shell-quoted where needed) in the folder `cwd`.
inline CommandResult run_mpsim(const std::string& args, const std::string& cwd = ".") {
  return run_mpsim_with("", args, cwd);
}

/// `mpirun -n N --oversubscribe` (with --allow-run-as-root when root), to launch mpsim on N ranks.
/// Its session files go to this test process's own folder: Open MPI 4's shared per-user folder is
/// removed by one finishing mpirun while another creates its files there (open-mpi/ompi#8510), which
/// failed tests running side by side.
inline std::string mpirun(int ranks) {
  return "OMPI_MCA_orte_tmpdir_base='" + scratch("mpi-session").string() + "' mpirun -n " + std::to_string(ranks) +
         " --oversubscribe" + (::geteuid() == 0 ? " --allow-run-as-root" : "");
}

}  // namespace mpsim::testing
