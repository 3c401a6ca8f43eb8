#include "rtrace/launcher/hostlist.hpp"

#include <cctype>

namespace rtrace::launcher {

namespace {

[[noreturn]] void fail(const std::string& list, const std::string& what) {
  throw HostlistError("host list `" + list + "`: " + what);
}

bool digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// Splits at commas that are not inside brackets.
std::vector<std::string> top_level_items(const std::string& list) {
  std::vector<std::string> items;
  std::string cur;
  int depth = 0;
  for (char c : list) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0) fail(list, "`]` without `[`");
    if (c == ',' && depth == 0) {
      items.push_back(cur);
      cur.clear();
      continue;
    }
    cur += c;
  }
  if (depth != 0) fail(list, "`[` without `]`");
  items.push_back(cur);
  return items;
}

// One name with bracket groups: the first group expanded, the rest recursively.
void expand_name(const std::string& list, const std::string& name, std::vector<std::string>& out) {
  const auto open = name.find('[');
  if (open == std::string::npos) {
    out.push_back(name);
    return;
  }
  const auto close = name.find(']', open);
  const std::string prefix = name.substr(0, open), body = name.substr(open + 1, close - open - 1),
                    rest = name.substr(close + 1);
  if (body.empty()) fail(list, "empty brackets in `" + name + "`");
  std::size_t begin = 0;
  while (begin <= body.size()) {
    auto comma = body.find(',', begin);
    const std::string range = body.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    const auto dash = range.find('-');
    const std::string a = range.substr(0, dash), b = dash == std::string::npos ? a : range.substr(dash + 1);
    if (!digits(a) || !digits(b) || a.size() > 9 || b.size() > 9)
      fail(list, "`" + range + "` in `" + name + "` is not a number or a range N-M");
    const long lo = std::stol(a), hi = std::stol(b);
    if (lo > hi) fail(list, "range `" + range + "` in `" + name + "` is empty");
    if (hi - lo > 100000) fail(list, "range `" + range + "` in `" + name + "` is too large");
    const std::size_t width = a.size() > 1 && a[0] == '0' ? a.size() : 0;  // "08-10" keeps two digits
    for (long v = lo; v <= hi; ++v) {
      std::string n = std::to_string(v);
      if (n.size() < width) n.insert(0, width - n.size(), '0');
      expand_name(list, prefix + n + rest, out);
    }
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
}

}  // namespace

std::vector<std::string> expand_hostlist(const std::string& list) {
  std::vector<std::string> out;
  if (list.empty()) return out;
  for (const auto& item : top_level_items(list)) {
    if (item.empty()) fail(list, "empty name (two commas in a row, or one at either end)");
    expand_name(list, item, out);
  }
  return out;
}

int allocation_tasks_per_node(const std::string& ntasks_per_node, const std::string& tasks_per_node) {
  if (digits(ntasks_per_node) && ntasks_per_node.size() < 7) return std::stoi(ntasks_per_node);
  std::size_t n = 0;
  while (n < tasks_per_node.size() && std::isdigit(static_cast<unsigned char>(tasks_per_node[n]))) ++n;
  if (n == 0 || n > 6) return 0;
  return std::stoi(tasks_per_node.substr(0, n));
}

std::string join_hosts(const std::vector<std::string>& hosts, std::size_t count) {
  std::string s;
  for (std::size_t i = 0; i < hosts.size() && i < count; ++i) s += (i ? "," : "") + hosts[i];
  return s;
}

}  // namespace rtrace::launcher
