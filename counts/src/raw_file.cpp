#include "rtrace/counts/raw_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace rtrace::counts {

namespace {

class LineReader {
 public:
  LineReader(const std::string& name, int line) : name_(name), line_(line) {}
  [[noreturn]] void fail(const std::string& what) const {
    throw RawFormatError(name_ + ":" + std::to_string(line_) + ": " + what);
  }
  std::int64_t integer(const std::string& field, const char* what) const {
    if (field.empty()) fail(std::string("missing ") + what);
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(field.c_str(), &end, 0);
    if (errno != 0 || !end || *end != '\0') fail(std::string("`") + field + "` is not an integer (" + what + ")");
    return v;
  }
  std::uint64_t unsigned_integer(const std::string& field, const char* what) const {
    if (field.empty() || field[0] == '-') fail(std::string("`") + field + "` is not a count (" + what + ")");
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(field.c_str(), &end, 0);
    if (errno != 0 || !end || *end != '\0') fail(std::string("`") + field + "` is not a count (" + what + ")");
    return v;
  }

 private:
  const std::string& name_;
  int line_;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream is(s);
  std::string w;
  while (is >> w) out.push_back(w);
  return out;
}

// The rest of the line after `n` space-separated fields (names and paths go last).
std::string rest_after(const std::string& line, int n) {
  std::size_t pos = 0;
  for (int i = 0; i < n; ++i) {
    pos = line.find_first_not_of(' ', pos);
    if (pos == std::string::npos) return "";
    pos = line.find(' ', pos);
    if (pos == std::string::npos) return "";
  }
  return pos + 1 <= line.size() ? line.substr(pos + 1) : "";
}

}  // namespace

const char* to_string(WindowPhase p) {
  switch (p) {
    case WindowPhase::Before: return "before";
    case WindowPhase::Inside: return "inside";
    case WindowPhase::After: return "after";
  }
  return "?";
}

RawProcess parse_raw(std::istream& in, const std::string& name) {
  RawProcess p;
  p.file = name;
  std::string line;
  int lineno = 0;
  bool header = false, ended = false;
  int version = 0;
  while (std::getline(in, line)) {
    ++lineno;
    LineReader r(name, lineno);
    if (ended) r.fail("data after the `end` line");
    if (line.empty()) continue;
    const auto f = split(line);
    const std::string& key = f[0];
    if (!header) {
      if (key != "rtrace-count-raw") r.fail("not an rtrace-count raw file (first line `" + line.substr(0, 40) + "`)");
      if (f.size() != 2 || (f[1] != "1" && f[1] != "2"))
        r.fail("raw format version `" + (f.size() > 1 ? f[1] : "") + "` is not 1 or 2");
      version = f[1] == "1" ? 1 : 2;
      header = true;
      continue;
    }
    auto need = [&](std::size_t n) {
      if (f.size() < n) r.fail("`" + key + "` needs " + std::to_string(n - 1) + " fields, has " + std::to_string(f.size() - 1));
    };
    if (key == "tool") {
      p.tool = rest_after(line, 1);
    } else if (key == "pid") {
      need(2);
      p.pid = r.integer(f[1], "pid");
    } else if (key == "ppid") {
      need(2);
      p.ppid = r.integer(f[1], "ppid");
    } else if (key == "forked") {
      need(2);
      p.forked = r.integer(f[1], "forked") != 0;
    } else if (key == "rank") {
      need(2);
      // The rank variable as the launcher set it; anything but a number is "no rank".
      char* end = nullptr;
      const long long v = std::strtoll(f[1].c_str(), &end, 10);
      p.rank = (end && *end == '\0' && v >= -1) ? v : -1;
    } else if (key == "exit_code") {
      need(2);
      p.exit_code = static_cast<int>(r.integer(f[1], "exit code"));
    } else if (key == "wall_ms") {
      need(2);
      p.wall_s = static_cast<double>(r.unsigned_integer(f[1], "wall time")) / 1000.0;
    } else if (key == "threads") {
      need(2);
      p.threads = static_cast<int>(r.integer(f[1], "threads"));
    } else if (key == "exe") {
      p.exe = rest_after(line, 1);
    } else if (key == "level") {
      need(7);
      RawLevel l;
      l.name = f[1];
      l.size_bytes = r.integer(f[2], "simulated size");
      l.full_size_bytes = r.integer(f[3], "cache size");
      l.line_bytes = static_cast<int>(r.integer(f[4], "line size"));
      l.associativity = static_cast<int>(r.integer(f[5], "associativity"));
      l.sharers = static_cast<int>(r.integer(f[6], "sharers"));
      if (l.size_bytes <= 0 || l.line_bytes <= 0 || l.associativity <= 0 || l.sharers <= 0)
        r.fail("level `" + l.name + "` has a non-positive size, line, associativity or sharers");
      // Since the shared levels (a tool of before writes 7 fields: private levels).
      if (f.size() >= 9) {
        l.threads_sharing = static_cast<int>(r.integer(f[7], "threads sharing"));
        l.copies = static_cast<int>(r.integer(f[8], "copies"));
        if (l.threads_sharing < 0 || l.copies < 0 || (l.threads_sharing > 0) != (l.copies > 0))
          r.fail("level `" + l.name + "`: threads sharing " + f[7] + " and copies " + f[8] + " do not go together");
      }
      p.levels.push_back(l);
    } else if (key == "nodecode") {
      need(2);
      NoDecode nd;
      nd.vaddr = r.unsigned_integer(f[1], "address");
      std::size_t i = 2;
      for (; i < f.size() && f[i] != "|"; ++i) nd.bytes.push_back(static_cast<std::uint8_t>(std::strtoul(f[i].c_str(), nullptr, 16)));
      const auto bar = line.find(" | ");
      if (bar != std::string::npos) nd.module = line.substr(bar + 3);
      p.nodecode = nd;
    } else if (key == "window") {
      need(2);
      RawWindow& w = p.window;
      w.kind = f[1];
      if (w.kind == "mpi") {
        need(3);
        w.mpi = f[2];
        if (w.mpi != "seen" && w.mpi != "none" && w.mpi != "off") r.fail("unknown MPI window state `" + w.mpi + "`");
      } else if (w.kind == "user") {
        for (std::size_t i = 2; i < f.size();) {
          if (f[i] == "calls" && i + 3 < f.size()) {
            w.first_call = r.integer(f[i + 1], "first call");
            w.last_call = r.integer(f[i + 2], "last call");
            w.function = f[i + 3];
            i += 4;
          } else if (f[i] == "ms" && i + 2 < f.size()) {
            w.from_ms = r.integer(f[i + 1], "window start");
            w.to_ms = r.integer(f[i + 2], "window end");
            i += 3;
          } else {
            r.fail("`window user` expects `calls N M FUNC` and/or `ms A B`, has `" + f[i] + "`");
          }
        }
      } else {
        r.fail("unknown window kind `" + w.kind + "`");
      }
    } else if (key == "window_calls") {
      need(2);
      p.window.calls = r.integer(f[1], "calls");
    } else if (key == "window_open_ms") {
      need(2);
      p.window.open_ms = r.integer(f[1], "window opening");
    } else if (key == "window_close_ms") {
      need(2);
      p.window.close_ms = r.integer(f[1], "window closing");
    } else if (key == "window_discards") {
      need(2);
      p.window.discards = r.integer(f[1], "discards");
    } else if (key == "phase") {
      need(4);
      const auto i = r.integer(f[1], "phase");
      if (i < 0 || i > 2) r.fail("phase " + f[1] + " is not 0, 1 or 2");
      if (f[3] != "full" && f[3] != "light") r.fail("phase mode `" + f[3] + "` is not full or light");
      p.window.phase_full[static_cast<std::size_t>(i)] = f[3] == "full";
    } else if (key == "module") {
      need(3);
      const auto id = r.integer(f[1], "module id");
      if (id != static_cast<std::int64_t>(p.modules.size())) r.fail("module ids must count up from 0");
      p.modules.push_back(rest_after(line, 2));
    } else if (key == "fn") {
      need(version == 1 ? 5 : 6);
      const auto id = r.integer(f[1], "function id");
      if (id != static_cast<std::int64_t>(p.functions.size())) r.fail("function ids must count up from 0");
      RawFunction fn;
      fn.module = r.integer(f[2], "module id");
      if (fn.module < -1 || fn.module >= static_cast<std::int64_t>(p.modules.size()))
        r.fail("function " + f[1] + " names module " + f[2] + ", which is not listed before it");
      fn.vaddr = r.unsigned_integer(f[3], "address");
      if (version >= 2) {
        const auto ph = r.integer(f[4], "phase");
        if (ph < 0 || ph > 2) r.fail("function " + f[1] + ": phase " + f[4] + " is not 0, 1 or 2");
        fn.phase = static_cast<WindowPhase>(ph);
      }
      fn.symbol = rest_after(line, version == 1 ? 4 : 5);
      if (fn.symbol == "-") fn.symbol.clear();
      p.functions.push_back(fn);
    } else if (key == "c") {
      if (f.size() != 3 + kRawColumns)
        r.fail("a `c` row has " + std::to_string(kRawColumns) + " counts after thread and function, this one " +
               std::to_string(f.size() - 3));
      RawRow row;
      row.thread = static_cast<int>(r.integer(f[1], "thread"));
      row.function = r.integer(f[2], "function id");
      if (row.thread < 0 || row.thread >= std::max(p.threads, 1)) r.fail("thread " + f[1] + " is not below `threads`");
      if (row.function < 0 || row.function >= static_cast<std::int64_t>(p.functions.size()))
        r.fail("row names function " + f[2] + ", which is not listed before it");
      for (int k = 0; k < kRawColumns; ++k) row.values[k] = static_cast<double>(r.unsigned_integer(f[3 + k], "count"));
      p.rows.push_back(row);
    } else if (key == "end") {
      ended = true;
    } else {
      r.fail("unknown record `" + key + "`");
    }
  }
  if (!header) throw RawFormatError(name + ": empty file");
  if (!ended) throw RawFormatError(name + ": truncated (no `end` line)");
  if (p.pid < 0) throw RawFormatError(name + ": no `pid` line");
  if (p.levels.empty()) throw RawFormatError(name + ": no `level` line");
  return p;
}

RawProcess read_raw_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw RawFormatError(path + ": cannot open");
  return parse_raw(in, path);
}

std::vector<std::string> raw_files_in(const std::string& dir, std::vector<std::string>* unfinished) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("counts-", 0) != 0) continue;
    if (e.path().extension() == ".txt") out.push_back(e.path().string());
    else if (unfinished && name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0) unfinished->push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  if (unfinished) std::sort(unfinished->begin(), unfinished->end());
  return out;
}

}  // namespace rtrace::counts
