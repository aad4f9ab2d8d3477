#include "interop/formats/shell_script.h"

#include <cctype>
#include <map>

#include <fmt/format.h>

namespace mpsim::interop {
namespace {

/// A value of a variable: one element for a scalar, any number for an array.
using Value = std::vector<ShellWord>;

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/// How deep expansions may nest (defaults inside defaults, parentheses, variables naming
/// expressions): far past what scripts write, well short of the stack.
constexpr int kMaxNesting = 64;

/// Integer arithmetic of $((...)): + - * / % and parentheses over numbers and variables.
class Arithmetic {
 public:
  /// `depth`: variables whose values are themselves expressions nest, as in bash, up to kMaxNesting.
  Arithmetic(std::string_view text, const std::map<std::string, Value>& vars, int depth = 0)
      : text_(text), vars_(vars), depth_(depth) {}
  /// The value, or the name of what is missing (a variable unset or not a number, or syntax).
  std::optional<long long> evaluate(std::string& missing) {
    const auto v = sum();
    skip();
    if (!v || pos_ != text_.size()) {
      if (missing_.empty()) missing_ = fmt::format("$(({}))", text_);
      missing = missing_;
      return std::nullopt;
    }
    return v;
  }

 private:
  void skip() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  std::optional<long long> sum() {
    auto v = product();
    while (v) {
      skip();
      if (pos_ >= text_.size() || (text_[pos_] != '+' && text_[pos_] != '-')) break;
      const char op = text_[pos_++];
      const auto r = product();
      if (!r) return std::nullopt;
      v = op == '+' ? *v + *r : *v - *r;
    }
    return v;
  }
  std::optional<long long> product() {
    auto v = factor();
    while (v) {
      skip();
      if (pos_ >= text_.size() || (text_[pos_] != '*' && text_[pos_] != '/' && text_[pos_] != '%')) break;
      const char op = text_[pos_++];
      const auto r = factor();
      if (!r || (op != '*' && *r == 0)) return std::nullopt;
      v = op == '*' ? *v * *r : op == '/' ? *v / *r : *v % *r;
    }
    return v;
  }
  std::optional<long long> factor() {
    skip();
    if (pos_ >= text_.size()) return std::nullopt;
    const char c = text_[pos_];
    if (c == '(') {
      if (++depth_ > kMaxNesting) return std::nullopt;
      ++pos_;
      const auto v = sum();
      skip();
      if (pos_ >= text_.size() || text_[pos_] != ')') return std::nullopt;
      ++pos_;
      --depth_;
      return v;
    }
    if (c == '-') {
      ++pos_;
      const auto v = factor();
      return v ? std::optional<long long>(-*v) : std::nullopt;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      long long v = 0;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        v = v * 10 + (text_[pos_++] - '0');
        if (v > (1LL << 50)) return std::nullopt;
      }
      return v;
    }
    if (c == '$') ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '{') ++pos_;
    const std::size_t start = pos_;
    while (pos_ < text_.size() && is_name_char(text_[pos_])) ++pos_;
    const std::string name(text_.substr(start, pos_ - start));
    if (pos_ < text_.size() && text_[pos_] == '}') ++pos_;
    if (name.empty()) return std::nullopt;
    const auto it = vars_.find(name);
    if (it == vars_.end() || it->second.empty() || it->second.front().missing) {
      missing_ = it != vars_.end() && !it->second.empty() && it->second.front().missing ? *it->second.front().missing : name;
      return std::nullopt;
    }
    if (depth_ >= kMaxNesting) {
      missing_ = name;  // bash: "expression recursion level exceeded"
      return std::nullopt;
    }
    Arithmetic inner(it->second.front().text, vars_, depth_ + 1);
    std::string inner_missing;
    const auto v = inner.evaluate(inner_missing);
    if (!v) missing_ = name;
    return v;
  }

  std::string_view text_;
  const std::map<std::string, Value>& vars_;
  std::size_t pos_ = 0;
  std::string missing_;
  int depth_ = 0;
};

class Reader {
 public:
  Reader(std::string_view text, std::string file) : text_(text), file_(std::move(file)) {}

  std::vector<ShellCommand> run() {
    while (!at_end()) command();
    return commands_;
  }

 private:
  // ---- position ----
  [[nodiscard]] bool at_end() const { return pos_ >= text_.size(); }
  [[nodiscard]] char peek(std::size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  void advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    ++pos_;
  }
  [[nodiscard]] SourceLocation here() const { return {file_, line_, column_}; }
  [[noreturn]] void fail(const SourceLocation& where, const std::string& message) const {
    throw InputError(where, "", message);
  }

  /// Blanks, line continuations and comments; `newlines` also newlines (inside an array).
  void skip_blanks(bool newlines) {
    while (!at_end()) {
      const char c = peek();
      if (is_blank(c) || (newlines && c == '\n')) {
        advance();
      } else if (c == '\\' && peek(1) == '\n') {
        advance();
        advance();
      } else if (c == '#') {
        while (!at_end() && peek() != '\n') advance();
      } else {
        break;
      }
    }
  }
  [[nodiscard]] bool at_separator() const {
    const char c = peek();
    return at_end() || c == '\n' || c == ';' || c == '&' || c == '|';
  }

  // ---- commands ----
  void command() {
    skip_blanks(false);
    if (at_separator()) {
      while (!at_end() && (peek() == '\n' || peek() == ';' || peek() == '&' || peek() == '|')) advance();
      return;
    }
    ShellCommand cmd;
    bool assignments_allowed = true;
    while (true) {
      skip_blanks(false);
      if (at_separator() || peek() == ')') break;
      if (assignments_allowed && assignment()) continue;
      const SourceLocation start = here();
      const std::size_t before = pos_;
      std::vector<ShellWord> words = word(true);
      if (pos_ == before) advance();  // a '(' of a function or subshell: not part of any word
      if (!cmd.words.empty() || words.empty() ||
          (words.front().text != "export" && words.front().text != "declare" && words.front().text != "local" &&
           words.front().text != "readonly")) {
        assignments_allowed = false;
      }
      for (ShellWord& w : words) {
        if (w.where.line == 0) w.where = start;
        cmd.words.push_back(std::move(w));
      }
    }
    if (peek() == ')') advance();  // the end of a subshell: read straight through
    // `export A=1` and `declare -a X` alone set variables only.
    if (!cmd.words.empty()) {
      const std::string& first = cmd.words.front().text;
      const bool declaration = first == "export" || first == "declare" || first == "local" || first == "readonly";
      if (!declaration) commands_.push_back(std::move(cmd));
    }
  }

  /// NAME=value or NAME=( ... ) or NAME+=..., if one starts here.
  bool assignment() {
    std::size_t end = pos_;
    if (end >= text_.size() || !is_name_start(text_[end])) return false;
    while (end < text_.size() && is_name_char(text_[end])) ++end;
    const bool append = end < text_.size() && text_[end] == '+';
    if (append) ++end;
    if (end >= text_.size() || text_[end] != '=') return false;
    const std::string name(text_.substr(pos_, end - pos_ - (append ? 1 : 0)));
    while (pos_ <= end) advance();
    Value value;
    if (peek() == '(') {
      const SourceLocation open = here();
      advance();
      while (true) {
        skip_blanks(true);
        if (at_end()) fail(open, fmt::format("the array {} opened here is never closed with ')'", name));
        if (peek() == ')') {
          advance();
          break;
        }
        const SourceLocation start = here();
        const std::size_t before = pos_;
        for (ShellWord& w : word(true)) {
          if (w.where.line == 0) w.where = start;
          value.push_back(std::move(w));
        }
        if (pos_ == before) advance();  // an operator inside the array: not an element
      }
    } else {
      const SourceLocation start = here();
      std::vector<ShellWord> words = word(false);
      ShellWord joined{"", start, std::nullopt};
      for (const ShellWord& w : words) {
        joined.text += w.text;
        if (w.missing && !joined.missing) joined.missing = w.missing;
      }
      value.push_back(std::move(joined));
    }
    Value& target = vars_[name];
    if (!append) target.clear();
    const bool array_value = end + 1 < text_.size() && text_[end + 1] == '(';
    if (append && !target.empty() && value.size() == 1 && !array_value) {
      target.back().text += value.front().text;  // NAME+=text appends to a scalar
    } else {
      for (ShellWord& w : value) target.push_back(std::move(w));
    }
    return true;
  }

  // ---- words ----
  /// One word as written, expanded into the words it becomes (unquoted expansions split on blanks when
  /// `split`; "${A[@]}" gives one word per element).
  std::vector<ShellWord> word(bool split) {
    std::vector<ShellWord> out;
    ShellWord current{"", {}, std::nullopt};
    bool has_current = false;
    auto append = [&](const ShellWord& piece) {
      current.text += piece.text;
      if (piece.missing && !current.missing) current.missing = piece.missing;
      if (current.where.line == 0 && piece.where.line != 0) current.where = piece.where;
      has_current = true;
    };
    auto finish = [&] {
      if (has_current) out.push_back(current);
      current = ShellWord{"", {}, std::nullopt};
      has_current = false;
    };
    /// Adds an expansion's fields: the first joins the current word, each later one starts a new word.
    auto add_fields = [&](const std::vector<ShellWord>& fields, bool quoted) {
      bool first = true;
      for (const ShellWord& f : fields) {
        std::vector<ShellWord> pieces;
        if (split && !quoted && !f.missing) {
          std::size_t i = 0;
          while (i < f.text.size()) {
            while (i < f.text.size() && std::isspace(static_cast<unsigned char>(f.text[i]))) ++i;
            const std::size_t s = i;
            while (i < f.text.size() && !std::isspace(static_cast<unsigned char>(f.text[i]))) ++i;
            if (i > s) pieces.push_back({f.text.substr(s, i - s), f.where, std::nullopt});
          }
        } else {
          pieces.push_back(f);
        }
        for (const ShellWord& p : pieces) {
          if (!first) finish();
          append(p);
          first = false;
        }
      }
    };
    while (!at_end()) {
      const char c = peek();
      if (is_blank(c) || c == '\n' || c == ';' || c == '&' || c == '|' || c == ')' || c == '(') break;
      if (c == '\\') {
        advance();
        if (at_end()) break;
        if (peek() == '\n') {
          advance();
          break;  // a continuation ends the word
        }
        append({std::string(1, peek()), {}, std::nullopt});
        advance();
      } else if (c == '\'') {
        const SourceLocation open = here();
        advance();
        std::string literal;
        while (!at_end() && peek() != '\'') {
          literal += peek();
          advance();
        }
        if (at_end()) fail(open, "a single quote opened here is never closed");
        advance();
        append({literal, {}, std::nullopt});
      } else if (c == '"') {
        const SourceLocation open = here();
        advance();
        // "" is a word, but "${EMPTY[@]}" and "$@" with nothing in them are none.
        const bool had_current = has_current;
        const std::size_t words_before = out.size();
        const std::size_t text_before = current.text.size();
        bool only_expansions = true;
        has_current = true;
        while (!at_end() && peek() != '"') {
          if (peek() == '\\' && (peek(1) == '"' || peek(1) == '\\' || peek(1) == '$' || peek(1) == '`')) {
            advance();
            append({std::string(1, peek()), {}, std::nullopt});
            advance();
          } else if (peek() == '\\' && peek(1) == '\n') {
            advance();
            advance();
          } else if (peek() == '$' || peek() == '`') {
            add_fields(dollar(true), true);
          } else {
            only_expansions = false;
            append({std::string(1, peek()), {}, std::nullopt});
            advance();
          }
        }
        if (at_end()) fail(open, "a double quote opened here is never closed");
        advance();
        if (only_expansions && !had_current && out.size() == words_before && current.text.size() == text_before &&
            !current.missing) {
          has_current = false;
        }
      } else if (c == '$' || c == '`') {
        add_fields(dollar(false), false);
      } else {
        append({std::string(1, c), {}, std::nullopt});
        advance();
      }
    }
    finish();
    return out;
  }

  /// Reads a `$...` or backquoted expansion at the cursor; its fields (one per array element).
  std::vector<ShellWord> dollar(bool quoted) {
    const SourceLocation start = here();
    auto missing = [&](std::string what) { return std::vector<ShellWord>{{"", start, std::move(what)}}; };
    if (peek() == '`') {
      const std::size_t from = pos_;
      advance();
      while (!at_end() && peek() != '`') advance();
      if (!at_end()) advance();
      return missing(std::string(text_.substr(from, pos_ - from)));
    }
    advance();  // $
    if (peek() == '(' && peek(1) == '(') {
      advance();
      advance();
      const std::string expr = balanced(')');
      if (peek() == ')') advance();
      std::string what;
      const auto v = Arithmetic(expr, vars_).evaluate(what);
      if (!v) return missing(what);
      return {{std::to_string(*v), start, std::nullopt}};
    }
    if (peek() == '(') {
      advance();
      const std::string inner = balanced(')');
      return missing(fmt::format("$({})", inner));
    }
    if (peek() == '{') {
      advance();
      const std::string inner = balanced('}');
      return braced(inner, start, quoted);
    }
    if (peek() == '@' || peek() == '*') {
      advance();
      return {};  // the script's own arguments: none when it is read, not run
    }
    if (std::isdigit(static_cast<unsigned char>(peek())) || peek() == '#' || peek() == '?' || peek() == '$' ||
        peek() == '!') {
      const char c = peek();
      advance();
      return missing(fmt::format("${}", c));
    }
    if (!is_name_start(peek())) return {{"$", start, std::nullopt}};
    std::string name;
    while (!at_end() && is_name_char(peek())) {
      name += peek();
      advance();
    }
    return variable(name, start, false);
  }

  /// The text up to the `close` that balances an already-read opening, which it consumes.
  std::string balanced(char close) {
    const char open = close == ')' ? '(' : '{';
    int depth = 1;
    std::string out;
    while (!at_end()) {
      const char c = peek();
      if (c == open) ++depth;
      if (c == close && --depth == 0) {
        advance();
        return out;
      }
      out += c;
      advance();
    }
    fail(here(), fmt::format("'{}' is never closed", open));
  }

  /// ${NAME}, ${NAME[@]}, ${NAME[i]}, ${NAME:-default}, ${NAME-default}, ${NAME:=default}, ${NAME:+alt}.
  std::vector<ShellWord> braced(const std::string& inner, const SourceLocation& start, bool quoted) {
    std::size_t i = 0;
    if (inner.empty() || !is_name_start(inner[0])) return {{"", start, fmt::format("${{{}}}", inner)}};
    while (i < inner.size() && is_name_char(inner[i])) ++i;
    const std::string name = inner.substr(0, i);
    if (i < inner.size() && inner[i] == '[') {
      const std::size_t close = inner.find(']', i);
      const std::string index = inner.substr(i + 1, close == std::string::npos ? std::string::npos : close - i - 1);
      if (close + 1 != inner.size()) return {{"", start, fmt::format("${{{}}}", inner)}};
      if (index == "@" || index == "*") return variable(name, start, true);
      const auto it = vars_.find(name);
      std::size_t k = 0;
      for (const char d : index) {
        if (!std::isdigit(static_cast<unsigned char>(d))) return {{"", start, fmt::format("${{{}}}", inner)}};
        k = k * 10 + static_cast<std::size_t>(d - '0');
      }
      if (it == vars_.end() || k >= it->second.size()) return {{"", start, name}};
      return {it->second[k]};
    }
    if (i == inner.size()) return variable(name, start, false);
    const bool colon = inner[i] == ':';
    const std::size_t op_at = colon ? i + 1 : i;
    if (op_at >= inner.size()) return {{"", start, fmt::format("${{{}}}", inner)}};
    const char op = inner[op_at];
    const std::string operand = inner.substr(op_at + 1);
    const auto it = vars_.find(name);
    const bool set = it != vars_.end() && (!colon || (!it->second.empty() && !it->second.front().text.empty()) ||
                                          (!it->second.empty() && it->second.front().missing));
    if (op == '-' || op == '=') {
      if (set) return variable(name, start, false);
      std::vector<ShellWord> value = expand_text(operand, start);
      if (op == '=') vars_[name] = value;
      return value;
    }
    if (op == '+') return set ? expand_text(operand, start) : std::vector<ShellWord>{};
    (void)quoted;
    return {{"", start, fmt::format("${{{}}}", inner)}};
  }

  /// A default's text, expanded as a double-quoted string would be.
  std::vector<ShellWord> expand_text(const std::string& raw, const SourceLocation& start) {
    std::string unquoted;
    for (const char c : raw) {
      if (c != '"' && c != '\'') unquoted += c;
    }
    if (depth_ >= kMaxNesting) return {{"", start, "${...} nested too deep"}};
    Reader inner(unquoted, file_);
    inner.depth_ = depth_ + 1;
    inner.vars_ = vars_;
    inner.line_ = start.line;
    inner.column_ = start.column;
    ShellWord joined{"", start, std::nullopt};
    for (const ShellWord& w : inner.word(false)) {
      joined.text += w.text;
      if (w.missing && !joined.missing) joined.missing = w.missing;
    }
    return {joined};
  }

  std::vector<ShellWord> variable(const std::string& name, const SourceLocation& start, bool all_elements) {
    const auto it = vars_.find(name);
    if (it == vars_.end()) return {{"", start, name}};
    if (it->second.empty()) return {};
    if (!all_elements) {
      ShellWord w = it->second.front();
      w.where = start;
      return {w};
    }
    return it->second;  // array elements keep where each was written
  }

  std::string_view text_;
  std::string file_;
  std::size_t pos_ = 0;
  int line_ = 1;
  int column_ = 1;
  std::map<std::string, Value> vars_;
  std::vector<ShellCommand> commands_;
  int depth_ = 0;  ///< of defaults expanded inside defaults
};

}  // namespace

std::vector<ShellCommand> read_shell_commands(std::string_view text, const std::string& file) {
  return Reader(text, file).run();
}

}  // namespace mpsim::interop
