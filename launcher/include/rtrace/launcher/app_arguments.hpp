// Per-point placeholders in the app's arguments:
//   rtrace --sweep ranks=1,2,4 --sweep env:N=1000,2000,4000 --zip -- ./app --size {env:N}
// {threads} {ranks} {nodes} {sms} {point} {env:NAME} are replaced per point
// (argv to execve, no shell); `{{` and `}}` are literal braces.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace rtrace::launcher {

// What one point substitutes. `env` answers a variable of the app's
// environment at that point (nullopt: unset).
struct PlaceholderValues {
  long long threads = 1;
  long long ranks = 1;
  long long nodes = 1;
  std::optional<long long> sms;  // nullopt: no sms axis and no GPU
  long long point = 0;
  std::function<std::optional<std::string>(const std::string&)> env;
};

// Checks the placeholders of every argument (APP excluded) without values:
// unknown names, an unclosed `{`, a lone `}`. Throws UsageError naming the
// argument, e.g. "app argument `--size {n}`: unknown placeholder `{n}` ...".
void check_app_placeholders(const std::vector<std::string>& app_argv);

// argv with every argument after APP expanded for one point. Throws
// UsageError when a value is missing ({env:N} with N unset, {sms} without an
// sms axis or GPU).
std::vector<std::string> expand_app_arguments(const std::vector<std::string>& app_argv, const PlaceholderValues& v);

// True when an argument holds a placeholder (or an escaped brace).
bool has_placeholders(const std::vector<std::string>& app_argv);

}  // namespace rtrace::launcher
