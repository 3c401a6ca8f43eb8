// The counting tool's raw output: one text file per counted process,
// counts-<rank>-<pid>.txt, written by the Valgrind tool (counts/tool/rc_main.c)
// at the process's exit (temp file + rename). Format, one record per line:
//
//   rtrace-count-raw 1                         format version (first line)
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
//   module ID PATH
//   fn ID MODULE_ID 0xVADDR SYMBOL|-            a function (or a 256-byte chunk of code
//                                               without symbols), by ELF address; MODULE_ID
//                                               -1 with a [bracketed] SYMBOL: the tool's own
//                                               ([dirty lines written back at exit])
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

struct RawFunction {
  std::int64_t module = -1;         // index into RawProcess::modules; -1: code outside any module
  std::uint64_t vaddr = 0;          // ELF address of its first instruction seen
  std::string symbol;               // Valgrind's name for it; "" when it has none
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
