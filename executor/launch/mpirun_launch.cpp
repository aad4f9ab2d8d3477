#include "executor/launch/mpirun_launch.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <stdexcept>

#include <fmt/format.h>

namespace mpsim::executor {

bool started_by_mpi_launcher() noexcept {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS", "SLURM_PROCID"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

std::vector<std::string> own_arguments_without_ranks() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> all;
  std::string arg;
  while (std::getline(in, arg, '\0')) all.push_back(arg);
  std::vector<std::string> out;
  for (std::size_t i = 1; i < all.size(); ++i) {
    if (all[i] == "--ranks") {
      ++i;
      continue;
    }
    if (all[i].rfind("--ranks=", 0) == 0) continue;
    out.push_back(all[i]);
  }
  return out;
}

namespace {

/// Open MPI 4 keeps every job's session files under one folder per user and host
/// ($TMPDIR/ompi.HOST.UID), which a finishing mpirun removes when it looks empty: another mpirun
/// starting at that moment fails with "A call to mkdir was unable to create the desired directory"
/// (open-mpi/ompi#8510, seen when tests launch jobs side by side). Each launch gets a folder of its
/// own (orte_tmpdir_base), removed when the job ends; a base the user set is left alone.
class PrivateSessionFolder {
 public:
  PrivateSessionFolder() {
    if (std::getenv(kVariable) != nullptr) return;
    std::error_code ec;
    std::string pattern = (std::filesystem::temp_directory_path(ec) / "mpsim-mpirun-XXXXXX").string();
    if (ec) return;  // no usable temporary folder: Open MPI's default applies
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~PrivateSessionFolder() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  PrivateSessionFolder(const PrivateSessionFolder&) = delete;
  PrivateSessionFolder& operator=(const PrivateSessionFolder&) = delete;

  /// In the child before exec: points mpirun at the folder.
  void export_to_environment() const {
    if (!path_.empty()) ::setenv(kVariable, path_.c_str(), 1);
  }

 private:
  static constexpr const char* kVariable = "OMPI_MCA_orte_tmpdir_base";
  std::string path_;
};

/// Reads mpirun's standard error line by line and turns it into at most one error line of ours.
void relay_errors(int fd, LaunchResult& result) {
  FILE* err = ::fdopen(fd, "r");
  const std::regex died(R"(process rank (\d+) with PID \d+ on node \S+ exited on signal (\d+)(?: \(([^)]*)\))?)");
  bool reported = false;
  std::string line;
  std::vector<char> buffer(4096);
  while (std::fgets(buffer.data(), static_cast<int>(buffer.size()), err) != nullptr) {
    line += buffer.data();
    if (line.empty() || line.back() != '\n') continue;
    std::smatch m;
    const bool is_error = line.find("error") != std::string::npos;
    if (line.rfind("mpsim:", 0) == 0) {
      if (!reported || !is_error) std::cerr << line;
      reported = reported || is_error;
    } else if (std::regex_search(line, m, died)) {
      if (!reported) {
        std::cerr << fmt::format("mpsim: error: rank {} died (signal {}{})\n", m[1].str(), m[2].str(),
                                 m[3].matched ? ", " + m[3].str() : std::string());
      }
      reported = true;
    } else if (result.first_other_line.empty() && line.find_first_not_of(" -\n") != std::string::npos) {
      result.first_other_line = line.substr(0, line.size() - 1);
    }
    line.clear();
  }
  std::fclose(err);
  result.reported = reported;
}

}  // namespace

LaunchResult run_under_mpirun(int ranks, const std::vector<std::string>& args) {
  if (ranks < 1) throw std::runtime_error(fmt::format("--ranks must be at least 1, not {}", ranks));
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error(fmt::format("cannot find this executable (/proc/self/exe): {}", ec.message()));
  std::vector<std::string> argv = {"mpirun", "-np", std::to_string(ranks), "--oversubscribe"};
  if (::geteuid() == 0) argv.emplace_back("--allow-run-as-root");
  argv.push_back(self.string());
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> c_argv;
  for (auto& a : argv) c_argv.push_back(a.data());
  c_argv.push_back(nullptr);

  const PrivateSessionFolder session_folder;
  int err_pipe[2];
  int report[2];  // close-on-exec: tells the parent whether exec itself failed (no mpirun on PATH)
  if (::pipe(err_pipe) != 0 || ::pipe2(report, O_CLOEXEC) != 0) {
    throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  }
  const pid_t child = ::fork();
  if (child < 0) throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
  if (child == 0) {
    ::dup2(err_pipe[1], STDERR_FILENO);
    ::close(err_pipe[0]);
    ::close(err_pipe[1]);
    ::close(report[0]);
    // Ranks share the cores with each other: let idle MPI progress yield, and keep shared-memory
    // transfers off ptrace-based single copy, which containers often forbid.
    ::setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
    ::setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 0);
    // Without single copy a message above the eager limit (4 KiB) moves in fragments that each need
    // the sender inside MPI, and a rank that sends an activation and goes on computing holds it until
    // its next MPI call: a 2-stage gpipe of cpu-gpt-small measured 50% idle against 20% with single
    // copy. Eager sends up to 256 KiB (the activations of the closed loop's models), and a 16 MiB
    // shared segment to hold the fragments of a schedule's sends in flight (at 4 MiB they ran out and
    // the pipeline stalled again), restore the 20%.
    ::setenv("OMPI_MCA_btl_vader_eager_limit", "262144", 0);
    ::setenv("OMPI_MCA_btl_vader_max_send_size", "262144", 0);
    ::setenv("OMPI_MCA_btl_vader_segment_size", "16777216", 0);
    session_folder.export_to_environment();
    ::execvp(c_argv[0], c_argv.data());
    const int error = errno;
    [[maybe_unused]] const auto written = ::write(report[1], &error, sizeof error);
    ::_exit(127);
  }
  ::close(err_pipe[1]);
  ::close(report[1]);
  int exec_error = 0;
  const auto got = ::read(report[0], &exec_error, sizeof exec_error);
  ::close(report[0]);
  LaunchResult result;
  relay_errors(err_pipe[0], result);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (got == static_cast<ssize_t>(sizeof exec_error)) {
    throw std::runtime_error(
        fmt::format("cannot run mpirun: {} (is Open MPI installed?)", std::strerror(exec_error)));
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  return result;
}

int launch_exit_status(const LaunchResult& result) {
  const int code = result.exit_code;
  if (code != 0 && !result.reported) {
    std::cerr << "mpsim: error: the job failed";
    if (!result.first_other_line.empty()) std::cerr << ": " << result.first_other_line;
    std::cerr << "\n";
  }
  return code == 0 || code == 2 ? code : 1;
}

}  // namespace mpsim::executor
