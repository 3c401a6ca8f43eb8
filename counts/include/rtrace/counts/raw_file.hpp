// The counting tool's raw output: one text file per counted process,
// counts-<rank>-<pid>.txt, written by the Valgrind tool (counts/tool/rc_main.c)
// at the process's exit (temp file + rename). Format, one record per line:
//
//   rtrace-count-raw 2                         format version (first line; 1 is read too:
//                                               no window lines, `fn` without PHASE)
//   tool rtrace-count 0.1.0 valgrind-3.19.0
//   pid N | ppid N | forked 0|1 | rank R (-1: no rank variable)
//   exit_code N                                from the exit syscall; -1: killed by a signal
//   wall_ms N | threads N | exe PATH
//   level NAME SIM_BYTES FULL_BYTES LINE ASSOC SHARERS THREADS COPIES
//                                               one per simulated cache: SIM_BYTES is one
//                                               simulated cache; THREADS 0 and COPIES 0: a
//                                               private level (a cache per thread, 1/SHARERS of
//                                               an instance); else a level the process's threads
//                                               share: one cache per THREADS threads (creation
//                                               order), COPIES of them (older tools write no
//                                               THREADS COPIES: private levels)
//   nodecode 0xVADDR BYTE... | MODULE          an instruction Valgrind cannot run was reached
//   window mpi seen|none|off                   the MPI window (MPI_Init's return .. MPI_Finalize):
//                                               MPI_Init entered / never entered (the whole run
//                                               is the window) / switched off (--mpi-window=no)
//   window user [calls N M FUNC] [ms A B]      a user's window: calls N..M of FUNC (M 0: to the
//                                               end) and/or A..B ms of the process (B -1: to the end)
//   window_calls N                             calls of FUNC seen
//   window_open_ms N | window_close_ms N       when the window opened / closed (absent: never)
//   window_discards N                          translation discards the phase changes cost
//   phase P NAME full|light                    phase 0 before, 1 inside, 2 after the window:
//                                               light = instructions and FLOPs only (no bytes)
//   module ID PATH
//   fn ID MODULE_ID 0xVADDR PHASE SYMBOL|-      a function (or a 256-byte chunk of code
//                                               without symbols) in one phase, by ELF address;
//                                               MODULE_ID -1 with a [bracketed] SYMBOL: the
//                                               tool's own ([dirty lines written back at exit])
//   c THREAD FN INSTR F64S F64V128 F64V256 F64V512 F32S .. F16V512 L1R L1W L2R L2W L3R L3W MEMR MEMW
//   end                                         the file is complete
#pragma once

#include <array>
#include <cstdint>
#include <istream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace rtrace::counts {

class RawFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct RawLevel {
  std::string name;                 // "L1d", "L2", "L3"
  std::int64_t size_bytes = 0;      // simulated (the share)
  std::int64_t full_size_bytes = 0;
  int line_bytes = 0;
  int associativity = 0;
  int sharers = 1;                  // workers of the node on one instance
  int threads_sharing = 0;          // the process's threads on one simulated cache; 0: one per thread
  int copies = 0;                   // simulated caches of a shared level for the process; 0: private
};

// Phases of the counted window (the tool's RcPhase).
enum class WindowPhase : int { Before = 0, Inside = 1, After = 2 };
const char* to_string(WindowPhase p);   // "before", "inside", "after"

struct RawFunction {
  std::int64_t module = -1;         // index into RawProcess::modules; -1: code outside any module
  std::uint64_t vaddr = 0;          // ELF address of its first instruction seen
  std::string symbol;               // Valgrind's name for it; "" when it has none
  WindowPhase phase = WindowPhase::Inside;   // format 1: the whole run
};

// The counted window as the tool saw it (format 2; format 1: none recorded).
struct RawWindow {
  std::string kind;                 // "mpi", "user"; "" format 1
  std::string mpi;                  // kind mpi: "seen" (MPI_Init entered), "none", "off"
  std::string function;             // kind user: the function whose calls bound it ("" none)
  std::int64_t first_call = 0, last_call = 0;   // 1-based; last 0: to the end
  std::int64_t from_ms = -1, to_ms = -1;        // -1: none / to the end
  std::int64_t calls = -1;          // calls of `function` seen
  std::int64_t open_ms = -1, close_ms = -1;     // -1: never
  std::int64_t discards = 0;
  std::array<bool, 3> phase_full{{true, true, true}};   // false: instructions and FLOPs only
};

// Columns of a `c` row, in order.
enum RawColumn : int {
  kInstructions = 0,
  kFlopsFirst = 1,   // 12 FLOP kinds: FP64, FP32, FP16 x scalar, 128, 256, 512 bit
  kL1Read = 13, kL1Write, kL2Read, kL2Write, kL3Read, kL3Write, kMemRead, kMemWrite,
  kRawColumns = 21
};

struct RawRow {
  int thread = 0;
  std::int64_t function = 0;
  std::array<double, kRawColumns> values{};
};

struct NoDecode {
  std::uint64_t vaddr = 0;
  std::vector<std::uint8_t> bytes;
  std::string module;
  // EVEX-encoded (first byte 0x62 in 64-bit mode): an AVX-512 instruction.
  bool avx512() const { return !bytes.empty() && bytes[0] == 0x62; }
};

struct RawProcess {
  std::string file;                 // where it was read from
  std::string tool;                 // "rtrace-count 0.1.0 valgrind-3.19.0"
  std::int64_t pid = -1, ppid = -1;
  bool forked = false;              // a fork() child, counted from the fork on
  std::int64_t rank = -1;           // from OMPI_COMM_WORLD_RANK/PMIX_RANK/PMI_RANK/SLURM_PROCID
  int exit_code = -1;
  double wall_s = 0;
  int threads = 0;
  std::string exe;
  std::vector<RawLevel> levels;
  std::optional<NoDecode> nodecode;
  RawWindow window;
  std::vector<std::string> modules;
  std::vector<RawFunction> functions;
  std::vector<RawRow> rows;
};

// Parses one raw file. Throws RawFormatError "<name>:<line>: what" for any
// deviation, and for a file without its final `end` line.
RawProcess parse_raw(std::istream& in, const std::string& name);
RawProcess read_raw_file(const std::string& path);

// counts-*.txt files of `dir`, sorted; temp files of processes that died
// while writing (`*.tmp`) are listed in `unfinished`.
std::vector<std::string> raw_files_in(const std::string& dir, std::vector<std::string>* unfinished = nullptr);

}  // namespace rtrace::counts
