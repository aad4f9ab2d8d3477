// Every mpsim command shown in README.md and docs/ runs as written. A command is a line of a code
// block that starts with `mpsim` or `build/cli/mpsim` (continuations joined, a trailing `# comment`
// dropped). Synopses are skipped: lines with a placeholder (an upper-case word such as FILE or T,
// `...`, `[`, `|`, `$`, `<`), the CUDA backend's (no GPU here), and blocks marked `text` (a workflow
// with other programs, such as nvidia-smi writing the file mpsim reads). The commands of one file run in
// order in one scratch folder that links the repository's topologies/, configs/ and tests/, so one
// command may read what an earlier one wrote (`plan -o plan.yaml`, then `simulate --plan plan.yaml`).
// And every file they name exists: relative links, and repository paths in backquotes.
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/run_mpsim.h"

namespace {

namespace fs = std::filesystem;
using mpsim::testing::repo;

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// `# comment` at the end of a command, outside quotes, removed.
std::string without_comment(const std::string& line) {
  char quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#' && (i == 0 || line[i - 1] == ' ')) {
      return line.substr(0, line.find_last_not_of(' ', i - 1) + 1);
    }
  }
  return line;
}

bool is_synopsis(const std::string& command) {
  static const std::regex placeholder(R"((^|\s)[A-Z][A-Z0-9_]*(\.[a-z]+)?(\s|$)|\.\.\.|\[|\||\$|<)");
  return std::regex_search(command, placeholder) || command.find("--backend cuda") != std::string::npos;
}

/// The runnable commands of `markdown`, without their leading `mpsim`.
std::vector<std::string> commands(const std::string& markdown) {
  std::vector<std::string> out;
  std::istringstream in(markdown);
  std::string line;
  enum class Block { Outside, Run, Shown } block = Block::Outside;
  std::string pending;
  static const std::regex start(R"(^\s*(build/cli/)?mpsim (.*)$)");
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) {
      block = block != Block::Outside ? Block::Outside : line == "```text" ? Block::Shown : Block::Run;
      continue;
    }
    if (block != Block::Run) continue;
    std::smatch m;
    if (pending.empty()) {
      if (!std::regex_match(line, m, start)) continue;
      line = m[2];
    }
    const bool continued = !line.empty() && line.back() == '\\';
    if (continued) line.pop_back();
    pending += (pending.empty() ? "" : " ") + line;
    if (continued) continue;
    const std::string command = without_comment(pending);
    pending.clear();
    if (!is_synopsis(command)) out.push_back(command);
  }
  return out;
}

std::vector<fs::path> documents() {
  std::vector<fs::path> out{repo("README.md")};
  for (const auto& entry : fs::recursive_directory_iterator(repo("docs"))) {
    if (entry.path().extension() == ".md") out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// The repository files `markdown` (at `doc`) names: relative link targets, and backquoted paths under
/// the repository's top-level folders, except ones with an upper-case placeholder (`HARNESS/`).
std::vector<fs::path> named_files(const fs::path& doc, const std::string& markdown) {
  std::vector<fs::path> out;
  static const std::regex link(R"(\]\(([^)#\s]+)(#[^)]*)?\))");
  for (std::sregex_iterator it(markdown.begin(), markdown.end(), link), end; it != end; ++it) {
    const std::string target = (*it)[1];
    if (target.rfind("http", 0) != 0) out.push_back(doc.parent_path() / target);
  }
  static const std::regex path(
      R"(`((docs|configs|topologies|tests|sim|planner|executor|cli|gui|bench|tools|cmake)/[A-Za-z0-9_./-]+)`)");
  static const std::regex placeholder("/[A-Z][A-Z_]*(/|$)");
  for (std::sregex_iterator it(markdown.begin(), markdown.end(), path), end; it != end; ++it) {
    const std::string named = (*it)[1];
    if (!std::regex_search(named, placeholder)) out.push_back(repo(named));
  }
  return out;
}

TEST(DocsExamples, EveryFileNamedExists) {
  int checked = 0;
  for (const fs::path& doc : documents()) {
    for (const fs::path& file : named_files(doc, read(doc))) {
      EXPECT_TRUE(fs::exists(file)) << doc.filename().string() << " names " << file.string();
      ++checked;
    }
  }
  EXPECT_GE(checked, 50);
}

TEST(DocsExamples, EveryCommandRunsAsWritten) {
  int ran = 0;
  for (const fs::path& doc : documents()) {
    const fs::path work = mpsim::testing::scratch("docs") / doc.stem();
    fs::create_directories(work);
    for (const char* shared : {"topologies", "configs", "tests"}) {
      if (!fs::exists(work / shared)) fs::create_directory_symlink(repo(shared), work / shared);
    }
    for (const std::string& command : commands(read(doc))) {
      const mpsim::testing::CommandResult run = mpsim::testing::run_mpsim(command + " > /dev/null", work.string());
      EXPECT_EQ(run.exit_code, 0) << doc.filename().string() << ": mpsim " << command << "\n" << run.err;
      ++ran;
    }
  }
  fs::remove_all(mpsim::testing::scratch("docs"));
  EXPECT_GE(ran, 10);
}

}  // namespace
