#include "rtrace/counts/rank_counts.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>
#include <tuple>
#include <unordered_map>

namespace rtrace::counts {

namespace {

constexpr double kNaN = store::kUnavailable;

std::string hex(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string basename_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

class Names {
 public:
  std::int64_t id(const std::string& s) {
    auto it = index_.find(s);
    if (it != index_.end()) return it->second;
    const auto id = static_cast<std::int64_t>(names_.size());
    names_.push_back(s);
    index_.emplace(s, id);
    return id;
  }
  std::vector<std::string> take() { return std::move(names_); }

 private:
  std::vector<std::string> names_;
  std::unordered_map<std::string, std::int64_t> index_;
};

// Which levels a process simulated: its level rows say (the L3 or L2 may be absent).
struct LevelPresence {
  bool l2 = false, l3 = false;
};
LevelPresence presence_of(const RawProcess& p) {
  LevelPresence lp;
  for (const auto& l : p.levels) {
    if (l.name == "L2") lp.l2 = true;
    if (l.name == "L3") lp.l3 = true;
  }
  return lp;
}

// `bytes`: false for a part counted without the cache simulation (outside a
// user's window): its bytes are unavailable, not 0.
void add_values(store::CountRow& row, const RawRow& raw, const LevelPresence& lp, bool bytes = true) {
  const auto& v = raw.values;
  row.instructions += v[kInstructions];
  double* flops[12] = {&row.flops_fp64_scalar, &row.flops_fp64_v128, &row.flops_fp64_v256, &row.flops_fp64_v512,
                       &row.flops_fp32_scalar, &row.flops_fp32_v128, &row.flops_fp32_v256, &row.flops_fp32_v512,
                       &row.flops_fp16_scalar, &row.flops_fp16_v128, &row.flops_fp16_v256, &row.flops_fp16_v512};
  for (int k = 0; k < 12; ++k) *flops[k] += v[kFlopsFirst + k];
  if (!bytes) {
    row.bytes_l1_read = row.bytes_l1_write = row.bytes_l2_read = row.bytes_l2_write = kNaN;
    row.bytes_l3_read = row.bytes_l3_write = row.bytes_dram_read = row.bytes_dram_write = kNaN;
    return;
  }
  row.bytes_l1_read += v[kL1Read];
  row.bytes_l1_write += v[kL1Write];
  // A level that was not simulated has no traffic to report: NaN, not 0.
  row.bytes_l2_read = lp.l2 ? row.bytes_l2_read + v[kL2Read] : kNaN;
  row.bytes_l2_write = lp.l2 ? row.bytes_l2_write + v[kL2Write] : kNaN;
  row.bytes_l3_read = lp.l3 ? row.bytes_l3_read + v[kL3Read] : kNaN;
  row.bytes_l3_write = lp.l3 ? row.bytes_l3_write + v[kL3Write] : kNaN;
  row.bytes_dram_read += v[kMemRead];
  row.bytes_dram_write += v[kMemWrite];
}

std::string describe_outcome(const RunOutcome& o) {
  switch (o.kind) {
    case RunOutcome::Kind::Exited: return "exited with code " + std::to_string(o.exit_code);
    case RunOutcome::Kind::Signalled: return "killed by signal " + std::to_string(o.signal);
    case RunOutcome::Kind::TimedOut: {
      char buf[64];
      std::snprintf(buf, sizeof buf, "timed out after %.0f s", o.timeout_s);
      return buf;
    }
    case RunOutcome::Kind::Interrupted: return "interrupted";
    case RunOutcome::Kind::LaunchError: return "could not start: " + o.launch_error;
  }
  return "?";
}

// The note column holds 159 characters.
void set_note(store::CountInfoRow& info, const std::string& note) {
  store::set_text(info.note, note);
}

std::string seconds_of(std::int64_t ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(ms) / 1000.0);
  return buf;
}

// Where a row of phase `p` is, for a process whose window is `w`: an MPI
// window that never opened (no MPI_Init, or switched off) is the whole run.
WindowPhase effective_phase(const RawWindow& w, WindowPhase p) {
  if (w.kind == "user") return p;
  if (w.kind == "mpi" && w.mpi == "seen" && w.open_ms >= 0) return p;
  return WindowPhase::Inside;
}

}  // namespace

std::string window_description(const RawWindow& w) {
  if (w.kind.empty()) return "";
  if (w.kind == "mpi") {
    if (w.mpi == "off") return "the whole run";
    if (w.mpi == "none") return "the whole run (no MPI_Init)";
    if (w.open_ms < 0) return "the whole run (MPI_Init's return not seen)";
    return "MPI_Init..MPI_Finalize";
  }
  std::string out;
  if (!w.function.empty())
    out = w.last_call > 0 ? "calls " + std::to_string(w.first_call) + "-" + std::to_string(w.last_call) + " of " + w.function
                          : "calls from " + std::to_string(w.first_call) + " of " + w.function;
  if (w.from_ms >= 0) {
    if (!out.empty()) out += " and ";
    out += w.to_ms >= 0 ? seconds_of(w.from_ms) + "-" + seconds_of(w.to_ms) + " s of the counting run"
                        : "from " + seconds_of(w.from_ms) + " s of the counting run";
  }
  return out;
}

std::string window_problem(const RawWindow& w) {
  if (w.kind != "user") return "";
  const std::string what = "the counted window (" + window_description(w) + ")";
  const std::string calls =
      w.function.empty() || w.calls < 0 ? std::string() : w.function + " was called " + std::to_string(w.calls) + " time(s)";
  if (w.open_ms < 0)
    return what + " never opened" + (calls.empty() ? std::string() : ": " + calls) +
           (w.calls == 0 ? " (no such function, or inlined wherever it is called)" : "");
  if (w.close_ms < 0 && (w.last_call > 0 || w.to_ms >= 0))
    return what + " ran to the end of the run" + (calls.empty() ? std::string() : " (" + calls + ")");
  return "";
}

std::string unsupported_instruction_line(const RawProcess& p) {
  if (!p.nodecode) return "";
  const NoDecode& nd = *p.nodecode;
  std::string bytes;
  for (std::size_t i = 0; i < nd.bytes.size() && i < 6; ++i) {
    char b[4];
    std::snprintf(b, sizeof b, "%02x", nd.bytes[i]);
    bytes += (i ? " " : "") + std::string(b);
  }
  const std::string where = basename_of(nd.module.empty() ? p.exe : nd.module) + "+" + hex(nd.vaddr);
  if (nd.avx512())
    return "`" + basename_of(p.exe) + "` uses AVX-512 instructions (EVEX " + bytes + " at " + where +
           "), which Valgrind " + (p.tool.find("valgrind-") != std::string::npos ? p.tool.substr(p.tool.find("valgrind-") + 9) : std::string("3.19")) +
           " cannot run: build the counted binary for x86-64-v3 (-march=x86-64-v3, no -march=native), or use --counts pmu";
  return "`" + basename_of(p.exe) + "` reached an instruction Valgrind cannot decode (" + bytes + " at " + where +
         "): build the counted binary for an older ISA (e.g. -march=x86-64-v3), or use --counts pmu";
}

std::string unsupported_instruction_note(const RawProcess& p) {
  if (!p.nodecode) return "";
  const NoDecode& nd = *p.nodecode;
  const std::string where = basename_of(nd.module.empty() ? p.exe : nd.module) + "+" + hex(nd.vaddr);
  if (nd.avx512())
    return "AVX-512 instruction at " + where + ": Valgrind cannot run it; build for x86-64-v3 or use --counts pmu";
  return "instruction Valgrind cannot decode at " + where + "; build for an older ISA or use --counts pmu";
}

std::map<std::int64_t, CountedRank> build_rank_counts(const std::vector<RawProcess>& processes, int expected_ranks,
                                                      const RunOutcome& outcome, const FunctionNamer& namer,
                                                      const std::vector<std::string>& unfinished) {
  std::map<std::int64_t, std::vector<const RawProcess*>> by_rank;
  for (const auto& p : processes) by_rank[p.rank < 0 ? 0 : p.rank].push_back(&p);
  for (int r = 0; r < expected_ranks; ++r) by_rank[r];

  // Processes without a rank variable all count as rank 0. Several of them
  // that are not children of another counted process: an MPI launcher whose
  // rank variable rtrace does not read, and their counts are summed wrongly.
  std::set<std::int64_t> pids;
  for (const auto& p : processes) pids.insert(p.pid);
  int rankless_roots = 0;
  for (const auto& p : processes)
    if (p.rank < 0 && !p.forked && !pids.count(p.ppid)) ++rankless_roots;
  const bool run_ok = outcome.kind == RunOutcome::Kind::Exited;
  std::map<std::int64_t, CountedRank> out;
  for (auto& [rank, procs] : by_rank) {
    CountedRank cr;
    cr.rank = rank;
    store::CountInfoRow& info = cr.info;
    std::memset(&info, 0, sizeof info);
    info.threads = 0;
    info.serialised = 1;
    info.wall_s = kNaN;
    info.exit_code = -1;
    store::set_str(info.source, "sim:rtrace-count");
    if (procs.empty()) {
      store::set_str(info.status, "failed");
      set_note(info, "no counts from rank " + std::to_string(rank) + ": the counting run " + describe_outcome(outcome) +
                         " before this rank's process finished");
      if (!unfinished.empty()) cr.log.push_back(std::to_string(unfinished.size()) + " process(es) died while writing their counts");
      out.emplace(rank, std::move(cr));
      continue;
    }
    // The rank's own process first: not a fork child, then the earliest pid
    // (an exec'd child of a wrapper gets a later one).
    std::stable_sort(procs.begin(), procs.end(), [](const RawProcess* a, const RawProcess* b) {
      return std::make_tuple(a->forked, a->pid) < std::make_tuple(b->forked, b->pid);
    });
    const RawProcess& main = *procs.front();
    cr.pid = main.pid;
    store::set_str(info.source, "sim:" + (main.tool.empty() ? std::string("rtrace-count") : main.tool));
    info.wall_s = main.wall_s;
    info.exit_code = main.exit_code;

    for (const auto& l : main.levels) {
      store::CountLevelRow row;
      std::memset(&row, 0, sizeof row);
      store::set_str(row.name, l.name);
      row.size_bytes = l.size_bytes;
      row.full_size_bytes = l.full_size_bytes;
      row.line_bytes = l.line_bytes;
      row.associativity = l.associativity;
      row.sharers = l.sharers;
      row.threads_sharing = l.threads_sharing;
      row.copies = l.copies;
      cr.levels.push_back(row);
    }

    Names names;
    // (thread, function name, module name, window phase) -> row
    std::map<std::tuple<int, std::string, std::string, int>, store::CountRow> rows;
    std::string failure;
    bool partial = false;
    int thread_base = 0;
    for (const RawProcess* p : procs) {
      const LevelPresence lp = presence_of(*p);
      std::vector<FunctionName> fn_names(p->functions.size());
      std::vector<bool> named(p->functions.size(), false);
      for (const auto& raw : p->rows) {
        const auto f = static_cast<std::size_t>(raw.function);
        if (!named[f]) {
          const RawFunction& rf = p->functions[f];
          // The tool's own buckets (module -1, a name in brackets): the
          // write-backs at exit; otherwise code outside any known module.
          if (rf.module < 0 && !rf.symbol.empty() && rf.symbol.front() == '[') fn_names[f] = {rf.symbol, "[rtrace-count]"};
          else if (rf.module < 0) fn_names[f] = {"[unknown code]", "[unknown]"};
          else fn_names[f] = namer(p->modules[static_cast<std::size_t>(rf.module)], rf.vaddr);
          named[f] = true;
        }
        const WindowPhase tool_phase = p->functions[f].phase;
        const WindowPhase phase = effective_phase(p->window, tool_phase);
        const auto key = std::make_tuple(thread_base + raw.thread, fn_names[f].function, fn_names[f].module,
                                         static_cast<int>(phase));
        auto it = rows.find(key);
        if (it == rows.end()) {
          store::CountRow row{};  // zero, but flops_unsplit NaN: the tool splits every FLOP
          row.thread = thread_base + raw.thread;
          store::set_str(row.window, p->window.kind.empty() ? "" : to_string(phase));
          it = rows.emplace(key, row).first;
        }
        add_values(it->second, raw, lp, p->window.phase_full[static_cast<std::size_t>(tool_phase)]);
      }
      thread_base += std::max(p->threads, 1);
      if (p->nodecode && failure.empty()) failure = unsupported_instruction_note(*p);
      if (p != &main)
        cr.log.push_back("counts of pid " + std::to_string(p->pid) + (p->forked ? " (forked" : " (child") +
                         " of the rank, " + std::to_string(p->threads) + " thread(s)) added as threads from " +
                         std::to_string(thread_base - std::max(p->threads, 1)));
      if (p->exit_code != 0 && !p->nodecode) partial = true;
    }
    info.threads = thread_base;
    store::set_str(info.window, window_description(main.window));
    const std::string window_issue = window_problem(main.window);
    if (rank == 0 && rankless_roots > 1)
      cr.log.push_back("warning: " + std::to_string(rankless_roots) +
                       " separate processes had no rank variable (OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, "
                       "SLURM_PROCID) and were all counted as rank 0");
    for (auto& [key, row] : rows) {
      row.function_id = names.id(std::get<1>(key));
      row.module_id = names.id(std::get<2>(key));
      cr.counts.push_back(row);
    }
    cr.names = names.take();

    const std::string serial = "Valgrind ran the threads one at a time";
    if (!failure.empty()) {
      store::set_str(info.status, "failed");
      set_note(info, failure);
    } else if (main.window.kind == "user" && main.window.open_ms < 0) {
      // Nothing was counted fully: no window, no roofline.
      store::set_str(info.status, "failed");
      set_note(info, window_issue);
    } else if (!run_ok && outcome.kind != RunOutcome::Kind::Exited) {
      store::set_str(info.status, "failed");
      set_note(info, "the counting run " + describe_outcome(outcome) + "; counts cover the run up to then");
    } else if (partial || !unfinished.empty() || outcome.exit_code != 0) {
      // A failed run's counts cover what it did before failing: not the
      // point's work. The tool records -1 when the process called no exit
      // (a fatal signal).
      store::set_str(info.status, "partial");
      const std::string how = main.exit_code < 0 ? std::string("the counted process was killed by a signal")
                              : main.exit_code > 0
                                  ? "the counted process exited with code " + std::to_string(main.exit_code)
                                  : "the counting run " + describe_outcome(outcome);
      set_note(info, how + (unfinished.empty() ? "" : "; a child died before writing its counts") + "; " + serial);
    } else {
      store::set_str(info.status, "ok");
      bool shared = false;
      for (const auto& l : main.levels) shared |= l.threads_sharing > 0;
      const std::string threads = info.threads > 1 ? serial + " (" + std::to_string(info.threads) + " threads; " +
                                                         (shared ? "their streams into the shared caches interleaved)"
                                                                 : "private caches each)")
                                                   : std::string("one thread");
      set_note(info, window_issue.empty() ? threads : window_issue + "; " + threads);
    }
    out.emplace(rank, std::move(cr));
  }
  return out;
}

}  // namespace rtrace::counts
