#include "rtrace/ert/reference.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace rtrace::ert {

namespace {

std::string fmt1(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string fmt2(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string fmt_percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f %%", fraction * 100);
  return buf;
}

std::string hex8(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (char c : text) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return std::string(buf, 8);
}

// A host name as a file name component.
std::string file_safe(std::string s) {
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) c = '_';
  return s.empty() ? "unknown" : s;
}

void add_reason(store::CeilingRow& c, const std::string& reason) {
  std::string text = store::get_str(c.unreliable_reason);
  text += (text.empty() ? "" : "; ") + reason;
  c.unreliable = 1;
  store::set_str(c.unreliable_reason, text);
}

// A measurement as the file keeps it: the best's fields sit in the ceiling's
// own object (as files of 2026-11-28 have them; required), the runner-up's in
// its own (without a value: none).
ReferenceValue read_value(const nlohmann::json& j, bool required) {
  ReferenceValue v;
  v.value = required ? j.at("value").get<double>() : j.value("value", 0.0);
  v.min = j.value("min", v.value);
  v.max = j.value("max", v.value);
  v.repeats = j.value("repeats", 0);
  v.date = j.value("date", "");
  return v;
}

nlohmann::json value_json(const ReferenceValue& v) {
  return {{"value", v.value}, {"min", v.min}, {"max", v.max}, {"repeats", v.repeats}, {"date", v.date}};
}

}  // namespace

const ReferenceValue& ReferenceCeiling::standing() const {
  return confirmed() && runner_up.value < best.value ? runner_up : best;
}

double observed_spread(const ReferenceCeiling& c, std::size_t* counted_out) {
  if (counted_out) *counted_out = 0;
  const double standing = c.standing().value;
  if (!(standing > 0)) return 0;
  double lowest = standing;
  std::size_t counted = 0;
  for (double v : c.recent) {
    if (v < standing * (1 - kOtherStateShortfall)) continue;  // another state, not noise
    lowest = std::min(lowest, v);
    ++counted;
  }
  if (counted_out) *counted_out = counted;
  return counted < kMinRecentForSpread ? 0 : std::max(0.0, 1 - lowest / standing);
}

const ReferenceCeiling* MachineReference::find(const std::string& name) const {
  for (const auto& c : ceilings)
    if (c.name == name && c.best.value > 0) return &c;
  return nullptr;
}

std::string ReferenceKey::file_name() const {
  return file_safe(host) + "-" + partition + "-" + version + "-" + hex8(identity) + ".json";
}

ReferenceKey reference_key(const store::MachineInfo& machine, int threads, int ranks, const std::string& kernels) {
  ReferenceKey k;
  k.host = machine.hostname.empty() ? store::hostname() : machine.hostname;
  k.partition = (ranks > 1 ? "r" + std::to_string(ranks) : std::string()) + "t" + std::to_string(threads);
  k.version = store::ert_cache_version();
  std::ostringstream id;
  id << "host " << k.host << "; cpu " << machine.cpu_model << "; " << machine.sockets << " sockets, " << machine.cores
     << " cores, " << machine.pus << " PUs; caches";
  for (const auto& c : machine.caches)
    id << " " << store::get_str(c.name) << " " << c.size_bytes << " B x" << c.instances << " shared by " << c.shared_by;
  id << "; partition " << k.partition << "; rtrace " << k.version << " kernels " << kernels;
  k.identity = id.str();
  return k;
}

std::string reference_path(const std::string& cache_dir, const ReferenceKey& key) {
  return cache_dir + "/ert/reference/" + key.file_name();
}

MachineReference read_reference(const std::string& path, std::string& problem) {
  MachineReference ref;
  problem.clear();
  std::ifstream in(path);
  if (!in) return ref;  // no history yet
  try {
    const nlohmann::json doc = nlohmann::json::parse(in);
    ref.machine = doc.value("machine", "");
    for (const auto& c : doc.at("ceilings")) {
      ReferenceCeiling r;
      r.name = c.at("name").get<std::string>();
      r.kind = c.value("kind", "");
      r.unit = c.value("unit", "");
      r.best = read_value(c, true);
      r.measurements = c.value("measurements", 1);
      if (c.contains("recent"))  // absent in files of 2026-11-28/29: no spread seen yet
        for (const auto& v : c.at("recent"))
          if (v.is_number() && v.get<double>() > 0 && std::isfinite(v.get<double>())) r.recent.push_back(v.get<double>());
      if (c.contains("runner_up") && c.at("runner_up").is_object()) {
        r.runner_up = read_value(c.at("runner_up"), false);
        if (!(r.runner_up.value > 0) || !std::isfinite(r.runner_up.value)) r.runner_up = ReferenceValue{};
      }
      if (r.recent.size() > ReferenceCeiling::kRecentValues)
        r.recent.erase(r.recent.begin(), r.recent.end() - ReferenceCeiling::kRecentValues);
      if (r.best.value > 0 && std::isfinite(r.best.value)) ref.ceilings.push_back(std::move(r));
    }
  } catch (const std::exception& e) {
    problem = "the machine's reference " + path + " is unreadable (" + e.what() + "): measured without it";
    return MachineReference{};
  }
  return ref;
}

std::string write_reference(const std::string& path, const MachineReference& reference) {
  nlohmann::json ceilings = nlohmann::json::array();
  for (const auto& c : reference.ceilings) {
    nlohmann::json entry = value_json(c.best);
    entry.update({{"name", c.name},
                  {"kind", c.kind},
                  {"unit", c.unit},
                  {"measurements", c.measurements},
                  {"recent", c.recent},
                  {"runner_up", value_json(c.runner_up)}});
    ceilings.push_back(std::move(entry));
  }
  const nlohmann::json doc = {
      {"what", "rtrace ert: the best ceilings measured on this machine and partition (issue 32); delete to reset"},
      {"machine", reference.machine},
      {"ceilings", ceilings}};
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec) return "cannot create " + fs::path(path).parent_path().string() + ": " + ec.message();
  // Temp file + rename: concurrent measurements never read half a file (one
  // of two simultaneous updates may be lost: the reference is a best value,
  // the next measurement restores it).
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp);
    out << doc.dump(1) << "\n";
    if (!out.flush()) {
      fs::remove(tmp, ec);
      return "cannot write " + tmp;
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return "cannot write " + path + ": " + ec.message();
  }
  return "";
}

store::CeilingRow reference_row(const ReferenceCeiling& r) {
  const ReferenceValue& v = r.standing();
  store::CeilingRow row{};
  store::set_str(row.name, r.name);
  store::set_str(row.kind, r.kind);
  store::set_str(row.unit, r.unit);
  row.value = v.value;
  row.min = v.min;
  row.max = v.max;
  row.repeats = v.repeats;
  return row;
}

std::vector<std::string> judge_against_reference(std::vector<store::CeilingRow>& rows, const MachineReference& reference,
                                                 double tolerance_floor, double tolerance_cap) {
  std::vector<std::string> notes;
  for (auto& row : rows) {
    const std::string name = store::get_str(row.name);
    const ReferenceCeiling* found = reference.find(name);
    store::set_str(row.source, "measured");
    row.measured = row.value;
    if (!found || !(row.value > 0)) continue;
    const ReferenceValue& ref = found->standing();
    const double within = store::ceiling_noise_tolerance(row, reference_row(*found), tolerance_floor, tolerance_cap);
    std::size_t counted = 0;
    const double between = std::min(tolerance_cap, observed_spread(*found, &counted));
    const bool unconfirmed = !found->confirmed();
    const double tol = std::max({within, between, unconfirmed ? kUnconfirmedTolerance : 0.0});
    if (row.value < ref.value * (1 - tol)) {
      std::string why;
      if (unconfirmed && kUnconfirmedTolerance >= std::max(within, between)) {
        why = "one run stands behind it";
      } else if (between > within) {
        why = "how far its last " + std::to_string(counted) + " reliable runs";
        if (counted < found->recent.size())
          why += " of this state (" + std::to_string(found->recent.size() - counted) + " more were another)";
        why += " fell below it";
      } else {
        why = fmt_percent(tolerance_floor) + " + the two runs' spreads";
      }
      add_reason(row, name + " " + fmt1(row.value) + " " + store::get_str(row.unit) + ", " +
                          fmt2(row.value / ref.value) + "x the " + fmt1(ref.value) + " measured on this machine on " +
                          ref.date + " (tolerance " + fmt_percent(tol) + ": " + why +
                          "): the machine was slower or busier now");
    }
    if (row.unreliable <= 0) continue;
    // Marked, not believed: the roofline uses what this machine has shown
    // it can do; the measurement stays in `measured`.
    notes.push_back(name + ": the machine's reference " + fmt1(ref.value) + " " + found->unit + " of " + ref.date +
                    " is used (this run measured " + fmt1(row.value) + ", marked unreliable)");
    row.value = ref.value;
    row.min = ref.min;
    row.max = ref.max;
    row.repeats = ref.repeats;
    store::set_str(row.source, "reference");
    store::set_str(row.reference_date, ref.date);
  }
  return notes;
}

MachineReference updated_reference(MachineReference reference, const std::vector<store::CeilingRow>& rows,
                                   const std::string& date) {
  for (const auto& row : rows) {
    if (row.unreliable > 0 || store::get_str(row.source) == "reference" || !(row.value > 0) ||
        !std::isfinite(row.value))
      continue;
    const std::string name = store::get_str(row.name);
    auto it = std::find_if(reference.ceilings.begin(), reference.ceilings.end(),
                           [&](const ReferenceCeiling& c) { return c.name == name; });
    if (it == reference.ceilings.end()) {
      ReferenceCeiling fresh;
      fresh.name = name;
      reference.ceilings.push_back(std::move(fresh));
      it = reference.ceilings.end() - 1;
    }
    ++it->measurements;
    it->recent.push_back(row.value);
    if (it->recent.size() > ReferenceCeiling::kRecentValues) it->recent.erase(it->recent.begin());
    const ReferenceValue measured{row.value, row.min, row.max, row.repeats, date};
    if (row.value > it->best.value) {
      if (it->best.value > 0) it->runner_up = it->best;
      it->best = measured;
      it->unit = store::get_str(row.unit);
      it->kind = store::get_str(row.kind);
    } else if (row.value > it->runner_up.value) {
      it->runner_up = measured;
    }
  }
  return reference;
}

std::string utc_date_today() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

}  // namespace rtrace::ert
