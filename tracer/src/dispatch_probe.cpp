#include "dispatch_probe.hpp"

#include "symbolize.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cstdio>
#include <cstring>
#include <string>

#if defined(__x86_64__) && defined(__has_include)
#if __has_include(<sys/platform/x86.h>)
// glibc >= 2.33: the x86_cpu_* feature indices (the function by dlsym). The
// header's inline helpers return C's _Bool, which clang rejects in C++.
#if defined(__clang__)
#define _Bool bool
#include <sys/platform/x86.h>
#undef _Bool
#else
#include <sys/platform/x86.h>
#endif
#define RTRACE_HAVE_GLIBC_X86_FEATURES 1
#endif
#endif

namespace rtrace::tracer {

namespace {

store::DispatchRow row(const std::string& library, const std::string& item, const std::string& choice,
                       const std::string& detail) {
  store::DispatchRow r;
  std::memset(&r, 0, sizeof r);
  store::set_str(r.library, library);
  store::set_str(r.item, item);
  store::set_str(r.choice, choice.size() < sizeof r.choice ? choice : choice.substr(0, sizeof r.choice - 1));
  store::set_str(r.detail, detail.size() < sizeof r.detail ? detail : detail.substr(0, sizeof r.detail - 1));
  return r;
}

std::string module_of(const void* fn) {
  Dl_info info{};
  if (!fn || dladdr(fn, &info) == 0 || !info.dli_fname) return "";
  return info.dli_fname;
}

std::string basename_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// OpenBLAS built with DYNAMIC_ARCH picks its kernels from CPUID at load
// time; OPENBLAS_CORETYPE forces a core by the name this returns.
void observe_openblas(std::vector<store::DispatchRow>& out) {
  using Text = char* (*)();
  auto corename = reinterpret_cast<Text>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  if (!corename) return;
  auto config = reinterpret_cast<Text>(dlsym(RTLD_DEFAULT, "openblas_get_config"));
  const char* core = corename();
  // "Unknown": not initialised yet, or already shut down: nothing observed.
  if (!core || !*core || std::strcmp(core, "Unknown") == 0) return;
  const char* cfg = config ? config() : nullptr;
  out.push_back(row("openblas", "core", core ? core : "", (cfg ? std::string(cfg) : std::string()) + " | " +
                                                         basename_of(module_of(reinterpret_cast<void*>(corename)))));
}

// MKL's code path (MKL_CBWR_* branch numbers of mkl_cbwr_get_auto_branch).
void observe_mkl(std::vector<store::DispatchRow>& out) {
  using Branch = int (*)();
  auto branch = reinterpret_cast<Branch>(dlsym(RTLD_DEFAULT, "mkl_cbwr_get_auto_branch"));
  if (!branch) return;
  const int b = branch();
  const char* name = b == 1 ? "AUTO" : b == 2 ? "COMPATIBLE" : b == 3 ? "SSE2" : b == 6 ? "SSSE3" : b == 7 ? "SSE4_1"
                     : b == 8 ? "SSE4_2" : b == 9 ? "AVX" : b == 10 ? "AVX2" : b == 11 ? "AVX512_MIC" : b == 12 ? "AVX512"
                     : b == 13 ? "AVX512_MIC_E1" : b == 14 ? "AVX512_E1" : nullptr;
  out.push_back(row("mkl", "cbwr_branch", name ? name : "branch " + std::to_string(b),
                    basename_of(module_of(reinterpret_cast<void*>(branch)))));
}

// glibc's IFUNCs (memcpy, strlen, ...) choose by the CPU features glibc
// finds active; GLIBC_TUNABLES=glibc.cpu.hwcaps=-NAME turns one off.
void observe_glibc(std::vector<store::DispatchRow>& out) {
#ifdef RTRACE_HAVE_GLIBC_X86_FEATURES
  struct Leaf {
    unsigned cpuid[4];
    unsigned active[4];
  };
  using GetLeaf = const Leaf* (*)(unsigned);
  auto get_leaf = reinterpret_cast<GetLeaf>(dlsym(RTLD_DEFAULT, "__x86_get_cpuid_feature_leaf"));
  if (!get_leaf) return;
  auto active = [&](unsigned index) {
    const Leaf* leaf = get_leaf(index / (8 * sizeof(unsigned) * 4));
    if (!leaf) return false;
    unsigned reg = index & (8 * sizeof(unsigned) * 4 - 1);
    const unsigned bit = reg & (8 * sizeof(unsigned) - 1);
    reg /= 8 * sizeof(unsigned);
    return (leaf->active[reg] & (1u << bit)) != 0;
  };
  // The features the string, memory and libm IFUNCs test (names as the
  // hwcaps tunable spells them; FSRM cannot be turned off that way).
  const std::pair<const char*, unsigned> features[] = {
      {"SSSE3", x86_cpu_SSSE3},       {"SSE4_1", x86_cpu_SSE4_1},     {"SSE4_2", x86_cpu_SSE4_2},
      {"POPCNT", x86_cpu_POPCNT},     {"MOVBE", x86_cpu_MOVBE},       {"LZCNT", x86_cpu_LZCNT},
      {"BMI1", x86_cpu_BMI1},         {"BMI2", x86_cpu_BMI2},         {"AVX", x86_cpu_AVX},
      {"AVX2", x86_cpu_AVX2},         {"FMA", x86_cpu_FMA},           {"FMA4", x86_cpu_FMA4},
      {"ERMS", x86_cpu_ERMS},         {"FSRM", x86_cpu_FSRM},         {"RTM", x86_cpu_RTM},
      {"AVX512F", x86_cpu_AVX512F},   {"AVX512CD", x86_cpu_AVX512CD}, {"AVX512BW", x86_cpu_AVX512BW},
      {"AVX512DQ", x86_cpu_AVX512DQ}, {"AVX512VL", x86_cpu_AVX512VL}};
  std::string on;
  for (const auto& [name, index] : features)
    if (active(index)) on += (on.empty() ? "" : ",") + std::string(name);
  const char* (*version)() = reinterpret_cast<const char* (*)()>(dlsym(RTLD_DEFAULT, "gnu_get_libc_version"));
  out.push_back(row("glibc", "hwcaps", on, std::string("glibc ") + (version ? version() : "?")));
  // The variants the IFUNCs resolved to, named where the symbols (or
  // separate debug symbols) say.
  Symbolizer sym;
  for (const char* fn : {"memcpy", "memset", "strlen", "strcmp", "memchr"}) {
    void* p = dlsym(RTLD_DEFAULT, fn);
    if (!p) continue;
    std::string name, where;
    Dl_info info{};
    if (dladdr(p, &info) != 0 && info.dli_fname) {
      char off[32];
      std::snprintf(off, sizeof off, "+0x%lx",
                    static_cast<unsigned long>(reinterpret_cast<std::uintptr_t>(p) - reinterpret_cast<std::uintptr_t>(info.dli_fbase)));
      where = basename_of(info.dli_fname) + off;
    }
    if (sym.ok()) {
      const auto frames = sym.frames(reinterpret_cast<std::uintptr_t>(p), false);
      if (!frames.empty()) name = frames.back().function;
    }
    out.push_back(row("glibc", fn, name.empty() ? where : name, where));
  }
#else
  (void)out;
#endif
}

// FFTW plans differ run to run (FFTW_MEASURE times candidates): loaded or not.
void observe_fftw(std::vector<store::DispatchRow>& out) {
  std::vector<std::string> paths;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        const char* name = info->dlpi_name;
        if (name && std::strstr(name, "libfftw3")) static_cast<std::vector<std::string>*>(data)->push_back(name);
        return 0;
      },
      &paths);
  for (const auto& p : paths) out.push_back(row("fftw", "loaded", basename_of(p), p));
}

}  // namespace

std::vector<store::DispatchRow> observe_blas() noexcept {
  std::vector<store::DispatchRow> out;
  try {
    observe_openblas(out);
    observe_mkl(out);
  } catch (...) {
  }
  return out;
}

std::vector<store::DispatchRow> observe_dispatch(const std::vector<store::DispatchRow>& early) noexcept {
  std::vector<store::DispatchRow> out;
  try {
    out = early;
    auto has = [&](const char* library) {
      for (const auto& r : out)
        if (store::get_str(r.library) == library) return true;
      return false;
    };
    if (!has("openblas")) observe_openblas(out);
    if (!has("mkl")) observe_mkl(out);
    observe_glibc(out);
    observe_fftw(out);
  } catch (...) {
    // Nothing observed is nothing steered; the tracer goes on.
  }
  return out;
}

}  // namespace rtrace::tracer
