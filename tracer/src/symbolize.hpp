// Turning sampled PCs into frames (after the run, never in a signal handler)
// and the frames into the rank's call-path tree. See docs/tracer.md.
#pragma once

#include "names.hpp"
#include "sampler.hpp"

#include "rtrace/store/records.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace rtrace::tracer {

// One source-level frame. A PC inside inlined code gives several, innermost first.
struct SourceFrame {
  std::string function;    // demangled; "module+0xOFFSET" when the module has no symbol for it
  std::string module;      // file name of the ELF module
  std::string file;        // source file ("" without debug info)
  int line = -1;
  std::int64_t offset = -1;  // module offset of the function's start (of the PC when unknown)
  std::string category;    // "app" | "mpi" | "openmp" | "system" | "rtrace"
  bool inlined = false;
};

// C++ (Itanium ABI) and gfortran module names to what users wrote:
// "_ZN4mesh5setupEv" -> "mesh::setup()", "__mesh_MOD_setup" -> "mesh::setup".
// Anything else is returned unchanged.
std::string demangle(const std::string& symbol);

// Which runtime a frame belongs to: store::code_category (rtrace/store/code_category.hpp),
// shared with the analysis; the Symbolizer also books the forwarding code of every MPI
// wrapper as "mpi", by address.

// Symbolises PCs of this process with elfutils (libdwfl) over /proc/self/maps.
class Symbolizer {
 public:
  Symbolizer();
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;
  bool ok() const noexcept;
  const std::string& error() const noexcept { return error_; }
  // `return_address`: a caller frame's PC points after the call; look up pc-1.
  std::vector<SourceFrame> frames(std::uintptr_t pc, bool return_address);
  // Symbol-table entries read so far: each module's table once, whatever the
  // number of PCs looked up in it (libdwfl's dwfl_module_addrinfo read the
  // whole table per PC).
  std::size_t symbol_entries_read() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string error_;
};

// Symbolises addresses of ELF files named by path, after the process that
// ran them is gone (the counting pass records module + ELF address). Names
// the function holding an address exactly as Symbolizer names the outermost
// (non-inlined) frame of a sampled PC there, so counted and sampled
// functions match by name.
class FileSymbolizer {
 public:
  FileSymbolizer();
  ~FileSymbolizer();
  FileSymbolizer(const FileSymbolizer&) = delete;
  FileSymbolizer& operator=(const FileSymbolizer&) = delete;
  // `vaddr`: the address in the file's own (link-time) address space. A
  // file that cannot be read gives "module+0xOFFSET" with offset = vaddr
  // and `error` set.
  SourceFrame function_at(const std::string& path, std::uint64_t vaddr, std::string* error = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

using FrameLookup = std::function<std::vector<SourceFrame>(std::uintptr_t pc, bool return_address)>;

// Builds the call-path tree of all threads: node per (parent, frame), self
// and inclusive counts, names interned in `names`. Pure given `lookup`.
std::vector<store::CallPathRow> build_call_paths(const std::vector<ThreadSamples>& threads, const FrameLookup& lookup,
                                                 NameTable& names);

}  // namespace rtrace::tracer
