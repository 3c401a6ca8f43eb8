#include "rtrace/launcher/app_arguments.hpp"

#include "rtrace/launcher/options.hpp"
#include "rtrace/launcher/sweep.hpp"

#include <rtrace/store/axis_names.hpp>

#include <cctype>

namespace rtrace::launcher {
namespace {

constexpr const char* kKnown =
    "known: {threads}, {ranks}, {nodes}, {sms}, {point}, {env:NAME}; write {{ and }} for literal braces";

bool valid_env_name(const std::string& n) {
  if (n.empty()) return false;
  for (char c : n)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

// Expands one argument. `value(name)` returns the replacement of a known
// placeholder name ("threads", "env:N") or throws; with `value` empty only the
// syntax and the names are checked.
std::string expand(const std::string& arg, const std::function<std::string(const std::string&)>& value) {
  auto fail = [&](const std::string& why) { return UsageError("app argument `" + arg + "`: " + why); };
  std::string out;
  for (std::size_t i = 0; i < arg.size(); ++i) {
    const char c = arg[i];
    if (c == '}') {
      if (i + 1 < arg.size() && arg[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      throw fail("a lone `}` (write }} for a literal brace)");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < arg.size() && arg[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const auto close = arg.find('}', i);
    if (close == std::string::npos) throw fail("`{` without a closing `}` (" + std::string(kKnown) + ")");
    const std::string name = arg.substr(i + 1, close - i - 1);
    const bool known = name == "threads" || name == "ranks" || name == "nodes" || name == "sms" || name == "point" ||
                       (name.rfind("env:", 0) == 0 && valid_env_name(name.substr(4)));
    if (!known) {
      std::string hint;
      for (const auto& n : store::likely_axis_names(name, /*with_point=*/true))
        if (n != "ranks-per-node")  // an axis, not a placeholder
          hint += (hint.empty() ? "`{" : " or `{") + n + "}`";
      throw fail("unknown placeholder `{" + name + "}` (" + (hint.empty() ? "" : "did you mean " + hint + "? ") + kKnown +
                 ")");
    }
    if (value) out += value(name);
    i = close;
  }
  return out;
}

}  // namespace

void check_app_placeholders(const std::vector<std::string>& app_argv) {
  for (std::size_t i = 1; i < app_argv.size(); ++i) expand(app_argv[i], nullptr);
}

bool has_placeholders(const std::vector<std::string>& app_argv) {
  for (std::size_t i = 1; i < app_argv.size(); ++i)
    if (app_argv[i].find_first_of("{}") != std::string::npos) return true;
  return false;
}

std::vector<std::string> expand_app_arguments(const std::vector<std::string>& app_argv, const PlaceholderValues& v) {
  std::vector<std::string> out;
  out.reserve(app_argv.size());
  for (std::size_t i = 0; i < app_argv.size(); ++i) {
    if (i == 0) {
      out.push_back(app_argv[0]);
      continue;
    }
    const std::string& arg = app_argv[i];
    out.push_back(expand(arg, [&](const std::string& name) -> std::string {
      if (name == "threads") return std::to_string(v.threads);
      if (name == "ranks") return std::to_string(v.ranks);
      if (name == "nodes") return std::to_string(v.nodes);
      if (name == "point") return std::to_string(v.point);
      if (name == "sms") {
        if (!v.sms) throw UsageError("app argument `" + arg + "`: {sms} needs an `sms` sweep axis or a GPU");
        return std::to_string(*v.sms);
      }
      const std::string env = name.substr(4);
      std::optional<std::string> value = v.env ? v.env(env) : std::nullopt;
      if (!value)
        throw UsageError("app argument `" + arg + "`: {env:" + env + "}: " + env +
                         " is not set (sweep it with --sweep env:" + env + "=..., or pass --env " + env + "=...)");
      return *value;
    }));
  }
  return out;
}

}  // namespace rtrace::launcher
