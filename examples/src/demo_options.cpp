#include "demo_options.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <sstream>

namespace rtrace::demo {
namespace {

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

long long parse_positive(const std::string& flag, const std::string& text, long long max) {
  if (text.empty()) throw UsageError(flag + ": expected a positive integer, got an empty value");
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (*end != '\0' || errno == ERANGE)
    throw UsageError(flag + " `" + text + "`: expected a positive integer");
  if (v <= 0 || v > max)
    throw UsageError(flag + " `" + text + "`: must be between 1 and " + std::to_string(max));
  return v;
}

}  // namespace

const std::vector<std::string>& kernel_variants(const std::string& kernel, bool cuda) {
  static const std::vector<std::string> none{"-"};
  static const std::vector<std::string> gsrb{"branch", "mask"};
  static const std::vector<std::string> spmv_cpu{"row"};
  static const std::vector<std::string> spmv_gpu{"row", "warp"};
  static const std::vector<std::string> gpp{"naive", "iw-outside", "divides-replaced", "blocked"};
  static const std::vector<std::string> fma_gpu{"fp32", "half2", "half", "wmma-fp16", "dmma-fp64", "wgmma-fp16"};
  if (kernel == "gsrb") return gsrb;
  if (kernel == "spmv") return cuda ? spmv_gpu : spmv_cpu;
  if (kernel == "gpp") return gpp;
  if (kernel == "fma" && cuda) return fma_gpu;
  return none;
}

std::vector<std::string> select_variants(const std::string& kernel, const std::string& requested, bool cuda) {
  const auto& all = kernel_variants(kernel, cuda);
  if (requested.empty()) return {all.front()};
  if (requested == "all") return all;
  if (std::find(all.begin(), all.end(), requested) != all.end()) return {requested};
  if (all.size() == 1 && all.front() == "-")
    throw UsageError("--variant `" + requested + "`: kernel " + kernel + " has no variants");
  std::string hint;
  if (kernel == "spmv" && requested == "warp" && !cuda) hint = " (warp-per-row is a GPU variant: use rtrace-demo-cuda)";
  throw UsageError("--variant `" + requested + "`: kernel " + kernel + " has variants " + join(all, ", ") +
                   " (or all)" + hint);
}

std::string usage(const ProgramInfo& p) {
  std::ostringstream os;
  os << "usage: " << p.name << " KERNEL [--size N] [--iters K] [--variant V]"
     << (p.has_threads ? " [--threads T]" : "") << (p.has_expect ? " [--expect FILE]" : "") << " [--quiet]\n"
     << "kernels: " << join(p.kernels, ", ") << "\n"
     << "  triad     a[i] = b[i] + s*c[i]            (--size elements)\n"
     << "  stencil7  7-point Jacobi sweep on an N^3 grid (--size N)\n"
     << "  gsrb      red-black Gauss-Seidel smoother, variants branch|mask (--size N)\n"
     << "  spmv      CSR sparse matrix-vector product, variants row" << (p.cuda ? "|warp" : "")
     << " (--size rows)\n"
     << "  gpp       BerkeleyGW-like GPP sigma kernel, variants naive|iw-outside|divides-replaced|blocked\n"
     << "            (--size ncouls; nbands = ncouls/16, ngpown = ncouls/8, nw = 3)\n"
     << "  dgemm     tiled C += A*B (--size N)\n";
  if (p.cuda)
    os << "  fma       FMA chains with exact FLOP counts, variants fp32|half2|half|wmma-fp16|dmma-fp64|wgmma-fp16\n"
       << "            (--size elements; tensor variants: accumulator elements, 256 or 64 per warp)\n";
  os
     << "  all       a representative set, each kernel its own rtrace region\n"
     << "--variant all runs every variant. Each kernel checks its result and the program exits 1 on a\n"
     << "wrong result, 2 on bad usage" << (p.cuda ? ", 2 when no GPU is found" : "") << ".\n";
  return os.str();
}

bool parse_options(int argc, char** argv, const ProgramInfo& p, DemoOptions& out) {
  out = DemoOptions{};
  std::vector<std::string> args(argv + 1, argv + argc);
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const std::string& flag) -> std::string {
      const auto eq = a.find('=');
      if (eq != std::string::npos) return a.substr(eq + 1);
      if (i + 1 >= args.size()) throw UsageError(flag + ": missing value");
      return args[++i];
    };
    auto is = [&](const char* flag) { return a == flag || a.rfind(std::string(flag) + "=", 0) == 0; };
    if (a == "-h" || a == "--help") {
      std::cout << usage(p);
      return false;
    } else if (is("--size")) {
      out.size = parse_positive("--size", value("--size"), 1LL << 40);
    } else if (is("--iters")) {
      out.iters = static_cast<int>(parse_positive("--iters", value("--iters"), 1000000));
    } else if (is("--variant")) {
      out.variant = value("--variant");
      if (out.variant.empty()) throw UsageError("--variant: empty value");
    } else if (p.has_threads && is("--threads")) {
      out.threads = static_cast<int>(parse_positive("--threads", value("--threads"), 4096));
    } else if (p.has_expect && is("--expect")) {
      out.expect_file = value("--expect");
    } else if (a == "--inject-error") {
      out.inject_error = true;
    } else if (a == "--quiet" || a == "-q") {
      out.quiet = true;
    } else if (!a.empty() && a[0] == '-') {
      throw UsageError("unknown option `" + a + "` (see --help)");
    } else if (out.kernel.empty()) {
      out.kernel = a;
    } else {
      throw UsageError("unexpected argument `" + a + "`: only one KERNEL is accepted");
    }
  }
  if (out.kernel.empty()) throw UsageError("missing KERNEL (one of " + join(p.kernels, ", ") + ")");
  if (std::find(p.kernels.begin(), p.kernels.end(), out.kernel) == p.kernels.end())
    throw UsageError("unknown kernel `" + out.kernel + "`: expected one of " + join(p.kernels, ", "));
  if (out.kernel == "all" && (!out.variant.empty() || out.size > 0))
    throw UsageError("`all` runs every kernel at its default size and variant: --size/--variant need a single KERNEL");
  if (out.kernel != "all") select_variants(out.kernel, out.variant, p.cuda);  // validates
  return true;
}

}  // namespace rtrace::demo
