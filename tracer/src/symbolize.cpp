#include "symbolize.hpp"

#include "rtrace/store/code_category.hpp"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>

// Bounds of the tracer's MPI forwarding code (RTRACE_MPI_WRAPPER in
// mpi_common.hpp), defined by the linker when that section exists; null in
// builds without the MPI layer (and in the unit tests).
extern "C" {
extern const char __start_rtrace_mpi_wrappers[] __attribute__((weak, visibility("hidden")));
extern const char __stop_rtrace_mpi_wrappers[] __attribute__((weak, visibility("hidden")));
}

namespace rtrace::tracer {

namespace {

// A PC in a wrapper that forwards an MPI call: its samples are MPI time.
bool in_mpi_wrapper(std::uintptr_t pc) {
  const auto begin = reinterpret_cast<std::uintptr_t>(__start_rtrace_mpi_wrappers);
  const auto end = reinterpret_cast<std::uintptr_t>(__stop_rtrace_mpi_wrappers);
  return begin != 0 && pc >= begin && pc < end;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

std::string basename_of(const char* path) {
  if (!path) return "";
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

std::string hex(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

std::string demangle(const std::string& symbol) {
  if (starts_with(symbol, "_Z")) {
    int status = 0;
    char* out = abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status);
    if (status == 0 && out) {
      std::string s = out;
      std::free(out);
      return s;
    }
    std::free(out);
    return symbol;
  }
  // gfortran module procedures: __<module>_MOD_<name>; module variables/ops
  // use the same scheme. (Intel: <module>_mp_<name>_.)
  if (starts_with(symbol, "__")) {
    auto mod = symbol.find("_MOD_", 2);
    if (mod != std::string::npos && mod > 2 && mod + 5 < symbol.size())
      return symbol.substr(2, mod - 2) + "::" + symbol.substr(mod + 5);
  }
  if (auto mp = symbol.find("_mp_"); mp != std::string::npos && mp > 0 && symbol.size() > mp + 5 &&
                                      symbol.back() == '_')
    return symbol.substr(0, mp) + "::" + symbol.substr(mp + 4, symbol.size() - mp - 5);
  return symbol;
}

// ---------------------------------------------------------------- Symbolizer

namespace {

// The code-carrying scopes of one compilation unit (functions and their
// inline instances with address ranges), read once per CU. dwarf_getscopes
// walks the CU's DIE tree again for every PC; on a large CU full of inlined
// templates that walk was most of the symbolisation time.
struct CodeScope {
  Dwarf_Die die;
  int depth = 0;
  bool inlined = false;
  std::vector<std::pair<Dwarf_Addr, Dwarf_Addr>> ranges;  // [low, high), DWARF addresses (before the load bias)

  bool contains(Dwarf_Addr a) const {
    for (const auto& r : ranges)
      if (a >= r.first && a < r.second) return true;
    return false;
  }
};

void collect_code_scopes(Dwarf_Die* parent, int depth, std::vector<CodeScope>& out) {
  Dwarf_Die child;
  if (dwarf_child(parent, &child) != 0) return;
  do {
    const int tag = dwarf_tag(&child);
    const bool code = tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block;
    if (code) {
      CodeScope scope;
      scope.die = child;
      scope.depth = depth;
      scope.inlined = tag == DW_TAG_inlined_subroutine;
      Dwarf_Addr base = 0, low = 0, high = 0;
      for (ptrdiff_t off = 0; (off = dwarf_ranges(&child, off, &base, &low, &high)) > 0;)
        if (high > low) scope.ranges.emplace_back(low, high);
      // No ranges: a declaration or an abstract instance, whose children
      // carry no code either.
      if (scope.ranges.empty()) continue;
      if (tag != DW_TAG_lexical_block) out.push_back(std::move(scope));
      collect_code_scopes(&child, depth + 1, out);
    } else if (dwarf_haschildren(&child) > 0) {
      // Namespaces, classes, Fortran modules: they may hold function definitions.
      collect_code_scopes(&child, depth + 1, out);
    }
  } while (dwarf_siblingof(&child, &child) == 0);
}

// One module's function symbols sorted by address, built once: libdwfl's
// dwfl_module_addrinfo scans the whole symbol table for every lookup, which
// on a large stripped library (.dynsym of tens of thousands of C++ symbols,
// say GROMACS's) made symbolisation cost 0.13-0.19 s a run, most of the
// sampling's fixed cost (issue 25).
struct SymbolIndex {
  struct Sym {
    Dwarf_Addr start = 0, size = 0;
    const char* name = nullptr;  // owned by libelf's mapping of the module
    int rank = 0;                // the name kept among aliases: GLOBAL > WEAK > LOCAL, typed > untyped
  };
  std::vector<Sym> syms;  // by start; one entry per start address

  explicit SymbolIndex(Dwfl_Module* mod) {
    const int n = dwfl_module_getsymtab(mod);
    for (int i = 1; i < n; ++i) {
      GElf_Sym sym;
      GElf_Addr addr = 0;
      const char* name = dwfl_module_getsym_info(mod, i, &sym, &addr, nullptr, nullptr, nullptr);
      if (!name || !*name || sym.st_shndx == SHN_UNDEF) continue;
      // Code symbols: functions, and untyped ones (assembly that omits
      // `.type`), as libdwfl considered them; never data, sections or files.
      const int type = GELF_ST_TYPE(sym.st_info);
      if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE) continue;
      const int bind = GELF_ST_BIND(sym.st_info);
      syms.push_back({addr, sym.st_size, name, (bind == STB_GLOBAL ? 4 : bind == STB_WEAK ? 2 : 0) + (type != STT_NOTYPE)});
    }
    // Aliases at one address: the most global name, then the one with a size.
    std::sort(syms.begin(), syms.end(), [](const Sym& a, const Sym& b) {
      if (a.start != b.start) return a.start < b.start;
      if (a.rank != b.rank) return a.rank > b.rank;
      return a.size > b.size;
    });
    syms.erase(std::unique(syms.begin(), syms.end(), [](const Sym& a, const Sym& b) { return a.start == b.start; }),
               syms.end());
  }

  // The symbol containing pc: a sized one whose range holds it (searched
  // back over a few neighbours, since a size-0 label may sit inside a
  // function), else the nearest size-0 symbol below it, as libdwfl chose;
  // nullptr when none.
  const Sym* find(Dwarf_Addr pc) const {
    auto it = std::upper_bound(syms.begin(), syms.end(), pc, [](Dwarf_Addr a, const Sym& s) { return a < s.start; });
    if (it == syms.begin()) return nullptr;
    const Sym* nearest = &*std::prev(it);
    int steps = 0;
    for (auto back = std::prev(it);; --back) {
      if (back->size > 0 && pc < back->start + back->size) return &*back;
      if (++steps == 64 || back == syms.begin()) break;
    }
    return nearest->size == 0 ? nearest : nullptr;
  }
};

// The module's build ID bytes as lower-case hex ("" when it has none).
std::string build_id_hex(const unsigned char* bits, int len) {
  std::string out;
  char two[3];
  for (int i = 0; i < len; ++i) {
    std::snprintf(two, sizeof two, "%02x", bits[i]);
    out += two;
  }
  return out;
}

// True when the ELF file open on `fd` carries exactly this build ID.
bool file_has_build_id(int fd, const std::string& want) {
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  if (!elf) return false;
  const void* id = nullptr;
  const ssize_t n = dwelf_elf_gnu_build_id(elf, &id);
  const bool same = n > 0 && build_id_hex(static_cast<const unsigned char*>(id), static_cast<int>(n)) == want;
  elf_end(elf);
  return same;
}

}  // namespace

// debuginfod's client cache, where `debuginfod-find debuginfo` left files
// (read as files: nothing is fetched): $DEBUGINFOD_CACHE_PATH, else
// $XDG_CACHE_HOME/debuginfod_client, else ~/.cache/debuginfod_client.
static std::string debuginfod_cache_dir() {
  if (const char* p = std::getenv("DEBUGINFOD_CACHE_PATH"); p && *p) return p;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/debuginfod_client";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/debuginfod_client";
  return "";
}

// Separate debug files on this machine only: by build ID under
// /usr/lib/debug/.build-id or in debuginfod's cache, else the .gnu_debuglink
// name beside the file, in its .debug/ or under /usr/lib/debug, kept only
// when its build ID matches.
// Never debuginfod: libdwfl's standard callback dlopens libdebuginfod, which
// takes the loader's lock in the traced process's exit path (in a fork child
// it could wait forever for a lock a thread of the parent held at fork), and
// with DEBUGINFOD_URLS set (Debian's login profile sets it) it would download
// debug files over the network while the app exits.
static int find_local_debuginfo(Dwfl_Module* mod, void**, const char*, Dwarf_Addr, const char* file_name,
                         const char* debuglink_file, GElf_Word, char** debuginfo_file_name) {
  const unsigned char* bits = nullptr;
  GElf_Addr vaddr = 0;
  const int len = dwfl_module_build_id(mod, &bits, &vaddr);
  if (len <= 1) return -1;  // no build ID: a debug file could not be told to match
  const std::string id = build_id_hex(bits, len);
  std::vector<std::string> candidates{"/usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug"};
  const std::string cache = debuginfod_cache_dir();
  if (!cache.empty()) candidates.push_back(cache + "/" + id + "/debuginfo");
  const std::size_t by_id = candidates.size();  // named by the build ID itself: no check needed
  if (file_name && debuglink_file && *debuglink_file && !std::strchr(debuglink_file, '/')) {
    std::string dir = file_name;
    dir.resize(dir.rfind('/') == std::string::npos ? 0 : dir.rfind('/'));
    for (const std::string& d : {dir, dir + "/.debug", "/usr/lib/debug" + dir})
      candidates.push_back(d + "/" + debuglink_file);
  }
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const std::string& path = candidates[i];
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    if (i < by_id || file_has_build_id(fd, id)) {
      if (debuginfo_file_name) *debuginfo_file_name = strdup(path.c_str());
      return fd;
    }
    close(fd);
  }
  return -1;
}

// The function (symbol) holding `pc` in `mod`, with its module, module
// offset and category: the outermost frame of a PC, before inlined frames.
static SourceFrame outer_frame(Dwfl_Module* mod, Dwarf_Addr pc, const SymbolIndex& symbols) {
  SourceFrame outer;
  Dwarf_Addr mod_start = 0;
  const char* mainfile = nullptr;
  const char* modname = dwfl_module_info(mod, nullptr, &mod_start, nullptr, nullptr, nullptr, &mainfile, nullptr);
  outer.module = basename_of(mainfile ? mainfile : modname);
  if (outer.module.empty()) outer.module = basename_of(modname);

  const SymbolIndex::Sym* found = symbols.find(pc);
  const char* sym_name = found ? found->name : nullptr;
  Dwarf_Addr fn_start = 0;
  if (sym_name && *sym_name) {
    std::string name = sym_name;
    if (auto at = name.find('@'); at != std::string::npos && at > 0) name.resize(at);  // "f@@GLIBC_2.34"
    // GCC clones of one function (".constprop.0", ".isra.0", ".part.0", ".cold") are that function.
    for (const char* suffix : {".constprop.", ".isra.", ".part.", ".cold"}) {
      auto at = name.find(suffix);
      if (at != std::string::npos && at > 0) name.resize(at);
    }
    outer.function = demangle(name);
    fn_start = found->start;
  } else {
    // No symbol (a stripped module): the function's start from the unwind
    // tables (.eh_frame FDE), so all PCs of one function share one name.
    fn_start = pc;
    Dwarf_Addr bias = 0;
    Dwarf_CFI* cfi = dwfl_module_eh_cfi(mod, &bias);
    Dwarf_Frame* frame = nullptr;
    if (cfi && dwarf_cfi_addrframe(cfi, pc - bias, &frame) == 0 && frame) {
      Dwarf_Addr start = 0, end = 0;
      if (dwarf_frame_info(frame, &start, &end, nullptr) >= 0) fn_start = start + bias;
      std::free(frame);
    }
    outer.function = outer.module + "+" + hex(fn_start - mod_start);
  }
  outer.offset = static_cast<std::int64_t>(fn_start - mod_start);
  outer.category = store::code_category(outer.module, outer.function);
  return outer;
}

struct Symbolizer::Impl {
  Dwfl_Callbacks callbacks{};
  char* debuginfo_path = nullptr;
  Dwfl* dwfl = nullptr;
  std::unordered_map<std::uintptr_t, std::vector<SourceFrame>> cache;
  // Per CU (keyed by the module and the CU DIE's offset): its code scopes.
  std::map<std::pair<Dwfl_Module*, Dwarf_Off>, std::vector<CodeScope>> cu_scopes;
  std::unordered_map<Dwfl_Module*, std::unique_ptr<SymbolIndex>> symbols;

  std::size_t symbol_entries_read = 0;

  const SymbolIndex& symbols_of(Dwfl_Module* mod) {
    auto& idx = symbols[mod];
    if (!idx) {
      idx = std::make_unique<SymbolIndex>(mod);
      const int n = dwfl_module_getsymtab(mod);
      symbol_entries_read += n > 0 ? static_cast<std::size_t>(n) : 0;
    }
    return *idx;
  }

  // The inline instances around a DWARF address (pc - bias), innermost first, up to
  // (not including) the function they are inlined into.
  std::vector<const CodeScope*> inline_chain(Dwfl_Module* mod, Dwarf_Die* cu, Dwarf_Addr addr) {
    auto key = std::make_pair(mod, dwarf_dieoffset(cu));
    auto it = cu_scopes.find(key);
    if (it == cu_scopes.end()) {
      std::vector<CodeScope> scopes;
      collect_code_scopes(cu, 0, scopes);
      it = cu_scopes.emplace(key, std::move(scopes)).first;
    }
    std::vector<const CodeScope*> around;
    for (const auto& sc : it->second)
      if (sc.contains(addr)) around.push_back(&sc);
    std::stable_sort(around.begin(), around.end(),
                     [](const CodeScope* a, const CodeScope* b) { return a->depth > b->depth; });
    std::vector<const CodeScope*> chain;
    for (const CodeScope* sc : around) {
      if (!sc->inlined) break;
      chain.push_back(sc);
    }
    return chain;
  }

  ~Impl() {
    if (dwfl) dwfl_end(dwfl);
  }

  static std::string die_name(Dwarf_Die* die) {
    Dwarf_Attribute attr;
    for (int at : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name}) {
      if (dwarf_attr_integrate(die, at, &attr)) {
        if (const char* s = dwarf_formstring(&attr)) return demangle(s);
      }
    }
    if (dwarf_attr_integrate(die, DW_AT_name, &attr))
      if (const char* s = dwarf_formstring(&attr)) return s;
    return "?";
  }

  std::vector<SourceFrame> lookup(std::uintptr_t pc) {
    std::vector<SourceFrame> out;
    Dwfl_Module* mod = dwfl ? dwfl_addrmodule(dwfl, pc) : nullptr;
    if (!mod) {
      SourceFrame unknown;
      unknown.function = "[unknown] " + hex(pc);
      unknown.module = "[unknown]";
      unknown.offset = -1;
      unknown.category = "app";
      out.push_back(unknown);
      return out;
    }
    SourceFrame outer = outer_frame(mod, pc, symbols_of(mod));
    if (in_mpi_wrapper(pc)) outer.category = "mpi";

    // Source lines and inlined frames for the application's own code only:
    // runtimes and libc are reported by function, and their (large) DWARF,
    // when installed, would cost most of the symbolisation time.
    if (outer.category != "app") {
      out.push_back(std::move(outer));
      return out;
    }
    std::string file;
    int line = -1;
    if (Dwfl_Line* ln = dwfl_module_getsrc(mod, pc)) {
      int l = 0;
      if (const char* f = dwfl_lineinfo(ln, nullptr, &l, nullptr, nullptr, nullptr)) {
        file = f;
        line = l;
      }
    }
    // Inlined frames, innermost first, from the DWARF scopes around the PC.
    Dwarf_Addr bias = 0;
    if (Dwarf_Die* cu = dwfl_module_addrdie(mod, pc, &bias)) {
      Dwarf_Files* files = nullptr;
      std::size_t nfiles = 0;
      bool have_files = dwarf_getsrcfiles(cu, &files, &nfiles) == 0;
      for (const CodeScope* scope : inline_chain(mod, cu, pc - bias)) {
        Dwarf_Die die = scope->die;
        SourceFrame f;
        f.function = die_name(&die);
        f.module = outer.module;
        f.file = file;
        f.line = line;
        f.offset = outer.offset;
        f.inlined = true;
        f.category = store::code_category(f.module, f.function);
        out.push_back(std::move(f));
        // The caller's location is the call site of this inline instance.
        Dwarf_Attribute attr;
        Dwarf_Word v = 0;
        if (dwarf_attr(&die, DW_AT_call_line, &attr) && dwarf_formudata(&attr, &v) == 0) line = static_cast<int>(v);
        if (have_files && dwarf_attr(&die, DW_AT_call_file, &attr) && dwarf_formudata(&attr, &v) == 0)
          if (const char* fname = dwarf_filesrc(files, v, nullptr, nullptr)) file = fname;
      }
    }
    outer.file = file;
    outer.line = line;
    out.push_back(std::move(outer));
    return out;
  }
};

Symbolizer::Symbolizer() : impl_(std::make_unique<Impl>()) {
  impl_->callbacks.find_elf = dwfl_linux_proc_find_elf;
  impl_->callbacks.find_debuginfo = find_local_debuginfo;
  impl_->callbacks.debuginfo_path = &impl_->debuginfo_path;
  impl_->dwfl = dwfl_begin(&impl_->callbacks);
  if (!impl_->dwfl) {
    error_ = std::string("dwfl_begin: ") + dwfl_errmsg(-1);
    return;
  }
  int rc = dwfl_linux_proc_report(impl_->dwfl, getpid());
  dwfl_report_end(impl_->dwfl, nullptr, nullptr);
  if (rc != 0) error_ = std::string("reading /proc/self/maps: ") + (rc > 0 ? std::strerror(rc) : dwfl_errmsg(-1));
}

Symbolizer::~Symbolizer() = default;

bool Symbolizer::ok() const noexcept { return impl_->dwfl != nullptr; }

std::size_t Symbolizer::symbol_entries_read() const noexcept { return impl_->symbol_entries_read; }

std::vector<SourceFrame> Symbolizer::frames(std::uintptr_t pc, bool return_address) {
  const std::uintptr_t addr = return_address && pc > 0 ? pc - 1 : pc;
  auto it = impl_->cache.find(addr);
  if (it != impl_->cache.end()) return it->second;
  auto f = impl_->lookup(addr);
  impl_->cache.emplace(addr, f);
  return f;
}

// ---------------------------------------------------------------- FileSymbolizer

struct FileSymbolizer::Impl {
  struct Module {
    Dwfl* dwfl = nullptr;
    Dwfl_Module* mod = nullptr;
    std::unique_ptr<SymbolIndex> symbols;  // built with the module
    std::string error;
  };
  Dwfl_Callbacks callbacks{};
  char* debuginfo_path = nullptr;
  std::map<std::string, Module> modules;

  Impl() {
    callbacks.find_elf = dwfl_build_id_find_elf;
    callbacks.find_debuginfo = find_local_debuginfo;  // the same debug files as the Symbolizer's: the same names
    callbacks.section_address = dwfl_offline_section_address;
    callbacks.debuginfo_path = &debuginfo_path;
  }
  ~Impl() {
    for (auto& [path, m] : modules)
      if (m.dwfl) dwfl_end(m.dwfl);
  }

  // One Dwfl per file, reported at its link-time addresses (bias 0), so files
  // never overlap and an ELF address is a Dwfl address.
  Module& module(const std::string& path) {
    auto it = modules.find(path);
    if (it != modules.end()) return it->second;
    Module m;
    m.dwfl = dwfl_begin(&callbacks);
    if (!m.dwfl) {
      m.error = std::string("dwfl_begin: ") + dwfl_errmsg(-1);
    } else {
      dwfl_report_begin(m.dwfl);
      m.mod = dwfl_report_elf(m.dwfl, basename_of(path.c_str()).c_str(), path.c_str(), -1, 0, false);
      if (!m.mod) m.error = "cannot read `" + path + "`: " + dwfl_errmsg(-1);
      dwfl_report_end(m.dwfl, nullptr, nullptr);
      if (m.mod) m.symbols = std::make_unique<SymbolIndex>(m.mod);
    }
    return modules.emplace(path, std::move(m)).first->second;
  }
};

FileSymbolizer::FileSymbolizer() : impl_(std::make_unique<Impl>()) {}
FileSymbolizer::~FileSymbolizer() = default;

SourceFrame FileSymbolizer::function_at(const std::string& path, std::uint64_t vaddr, std::string* error) {
  Impl::Module& m = impl_->module(path);
  if (m.mod) {
    // dwfl_module_info's start is the module's first loaded address, which is
    // what Symbolizer's offsets are relative to as well.
    return outer_frame(m.mod, static_cast<Dwarf_Addr>(vaddr), *m.symbols);
  }
  if (error) *error = m.error;
  SourceFrame f;
  f.module = basename_of(path.c_str());
  f.function = f.module + "+" + hex(vaddr);
  f.offset = static_cast<std::int64_t>(vaddr);
  f.category = store::code_category(f.module, f.function);
  return f;
}

// ---------------------------------------------------------------- call paths

std::vector<store::CallPathRow> build_call_paths(const std::vector<ThreadSamples>& threads, const FrameLookup& lookup,
                                                 NameTable& names) {
  std::vector<store::CallPathRow> rows;
  std::map<std::tuple<int, std::int64_t, std::int64_t, std::int64_t, int>, std::int64_t> index;
  std::map<std::pair<std::int64_t, int>, std::int64_t> line_counts;
  std::vector<std::pair<std::int64_t, int>> best_line;  // per node: samples, line
  std::vector<SourceFrame> path;
  for (const auto& t : threads) {
    for (const auto& s : t.stacks) {
      path.clear();
      if (static_cast<int>(s.pcs.size()) >= kMaxSampleDepth) {
        SourceFrame cut;
        cut.function = "[stack deeper than " + std::to_string(kMaxSampleDepth) + " frames]";
        cut.category = "app";
        path.push_back(cut);
      }
      for (std::size_t i = s.pcs.size(); i-- > 0;) {
        auto frames = lookup(s.pcs[i], i != 0);
        for (auto f = frames.rbegin(); f != frames.rend(); ++f) path.push_back(*f);
      }
      std::int64_t parent = -1;
      for (const SourceFrame& f : path) {
        const std::int64_t fn = names.id(f.function);
        const std::int64_t mod = names.id(f.module);
        auto key = std::make_tuple(t.thread, parent, fn, mod, f.inlined ? 1 : 0);
        auto it = index.find(key);
        std::int64_t node;
        if (it == index.end()) {
          node = static_cast<std::int64_t>(rows.size());
          store::CallPathRow r;
          std::memset(&r, 0, sizeof r);
          r.node_id = node;
          r.parent_id = parent;
          r.thread = t.thread;
          r.function_id = fn;
          r.module_id = mod;
          r.file_id = f.file.empty() ? -1 : names.id(f.file);
          r.line = -1;
          r.offset = f.offset;
          store::set_str(r.category, f.category);
          r.inlined = f.inlined ? 1 : 0;
          rows.push_back(r);
          best_line.emplace_back(0, -1);
          index.emplace(key, node);
        } else {
          node = it->second;
        }
        rows[static_cast<std::size_t>(node)].inclusive_samples += s.count;
        if (f.line >= 0) {
          std::int64_t& c = line_counts[{node, f.line}];
          c += s.count;
          if (c > best_line[static_cast<std::size_t>(node)].first) best_line[static_cast<std::size_t>(node)] = {c, f.line};
          if (rows[static_cast<std::size_t>(node)].file_id < 0 && !f.file.empty())
            rows[static_cast<std::size_t>(node)].file_id = names.id(f.file);
        }
        parent = node;
      }
      if (parent >= 0) rows[static_cast<std::size_t>(parent)].self_samples += s.count;
    }
  }
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i].line = best_line[i].second;
  return rows;
}

}  // namespace rtrace::tracer
