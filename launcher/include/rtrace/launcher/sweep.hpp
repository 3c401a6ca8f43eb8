// Sweep axes and plans: `--sweep threads=1..64:x2 --sweep env:N=1000,2000`.
//
// Grammar of one axis (AXIS=SPEC):
//   AXIS  := threads | ranks | ranks-per-node | nodes | sms | env:NAME
//   SPEC  := ITEM (',' ITEM)*
//   ITEM  := INT                 a single value
//          | INT '..' INT        inclusive range, step 1
//          | INT '..' INT ':' INT        arithmetic step
//          | INT '..' INT ':x' INT       geometric factor (a, a*k, a*k^2, ... <= b)
//          | WORD                (env:NAME axes only) a literal string value
// Values keep the order written; repeated values are dropped (use --repeat).
// Several axes form a Cartesian product (first axis outermost), or with --zip
// a pairing of equal-length axes. `ranks-per-node` needs a `nodes` axis and
// excludes `ranks` (a point's ranks are nodes x ranks-per-node).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace rtrace::launcher {

// A malformed sweep or plan. what() is the full one-line message, e.g.
// "sweep axis `sms=10..x`: expected a number after '..'".
class SweepSpecError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class AxisKind { Threads, Ranks, RanksPerNode, Nodes, Sms, Env };
// "threads", "ranks", "ranks-per-node", "nodes", "sms", "env"
const char* to_string(AxisKind k) noexcept;

struct SweepAxis {
  AxisKind kind = AxisKind::Threads;
  std::string name;                  // "threads" or "env:N"
  std::string env_name;              // "N" for env axes
  std::string spec;                  // as typed after '=': "1..64:x2"
  std::vector<std::string> values;   // canonical text of every value, in order
  std::vector<std::int64_t> numbers; // numeric values (same order); empty for non-numeric env values
  std::vector<std::string> repeated; // values given more than once (kept once in `values`)

  bool numeric() const noexcept { return numbers.size() == values.size(); }
  std::string text() const { return name + "=" + spec; }  // "threads=1..4"
};

// Parses "AXIS=SPEC". Throws SweepSpecError naming the axis text and the bad part.
// A value given twice is kept once (its first place) and listed in `repeated`,
// unless `keep_repeats` (a zipped axis, where only whole tuples can repeat).
SweepAxis parse_sweep_axis(const std::string& text, bool keep_repeats = false);

// One point of a plan. Unswept parameters are -1.
struct SweepPoint {
  std::int64_t id = 0;
  std::int32_t repeat = 0;
  std::vector<std::pair<std::string, std::string>> values;  // (axis name, value) in axis order
  std::int32_t threads = -1, ranks = -1, nodes = -1, sms = -1;
  std::int32_t ranks_per_node = -1;  // with a nodes axis: ranks = nodes x ranks_per_node
  std::vector<std::pair<std::string, std::string>> env;     // env:NAME axes as (NAME, value)

  std::string label() const;  // "threads=2 env:N=1000"
};

struct SweepPlan {
  std::vector<SweepAxis> axes;
  std::vector<SweepPoint> points;
  bool zip = false;
  int repeat = 1;
  // What the user should hear about the plan ("threads=1,2,1: 1 is given
  // twice; measured once"), without the "warning: " prefix.
  std::vector<std::string> warnings;

  // Human form used as the plan's identity for --resume: "threads=1..2 x env:N=1,2 (repeat 1)".
  std::string describe() const;
  bool has(AxisKind k) const noexcept;
};

// Parses every --sweep text and builds the plan. Throws SweepSpecError.
// Without any axis the plan has one point (a plain traced run).
SweepPlan make_sweep_plan(const std::vector<std::string>& axis_texts, bool zip, int repeat);

// Limit on values per axis and points per plan (a typo like 1..1e9 must not eat memory).
inline constexpr std::size_t kMaxSweepPoints = 100000;

}  // namespace rtrace::launcher
