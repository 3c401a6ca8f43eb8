// The counting pass names functions from module + ELF address after the
// process is gone (FileSymbolizer); the sampler names PCs of the live process
// (Symbolizer). The same function must get the same name and offset.
#include "symbolize.hpp"

#include <gtest/gtest.h>
#include <link.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>

using namespace rtrace::tracer;

extern "C" __attribute__((noinline)) double counts_symbolize_probe(double x) { return std::sqrt(x) + 1.0; }

namespace {

struct Found {
  std::string path;
  std::uintptr_t bias = 0;
};

// The module holding `addr` and its load bias, from the loader's list.
Found module_of(std::uintptr_t addr) {
  struct Query {
    std::uintptr_t addr;
    Found found;
  } q{addr, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* q = static_cast<Query*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          const std::uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
          if (q->addr >= lo && q->addr < lo + ph.p_memsz) {
            // The executable has no name in the list: its path from /proc.
            q->found.path = info->dlpi_name && *info->dlpi_name
                                ? std::string(info->dlpi_name)
                                : std::filesystem::read_symlink("/proc/self/exe").string();
            q->found.bias = info->dlpi_addr;
            return 1;
          }
        }
        return 0;
      },
      &q);
  return q.found;
}

void expect_same_name(std::uintptr_t pc) {
  Symbolizer live;
  ASSERT_TRUE(live.ok()) << live.error();
  const auto frames = live.frames(pc, false);
  ASSERT_FALSE(frames.empty());
  const SourceFrame& outer = frames.back();  // innermost first: the function itself is last
  const Found m = module_of(pc);
  ASSERT_FALSE(m.path.empty());
  FileSymbolizer files;
  std::string error;
  const SourceFrame f = files.function_at(m.path, pc - m.bias, &error);
  EXPECT_EQ(error, "");
  EXPECT_EQ(f.function, outer.function);
  EXPECT_EQ(f.module, outer.module);
  EXPECT_EQ(f.offset, outer.offset);
  EXPECT_EQ(f.category, outer.category);
}

}  // namespace

TEST(CountsSymbolize, FileNamesMatchLiveNamesInTheExecutable) {
  expect_same_name(reinterpret_cast<std::uintptr_t>(&counts_symbolize_probe) + 4);
  EXPECT_GT(counts_symbolize_probe(4.0), 2.0);
}

TEST(CountsSymbolize, FileNamesMatchLiveNamesInLibc) {
  expect_same_name(reinterpret_cast<std::uintptr_t>(&strtod) + 8);
}

TEST(CountsSymbolize, UnreadableFileGivesModulePlusOffset) {
  FileSymbolizer files;
  std::string error;
  const SourceFrame f = files.function_at("/nonexistent/libfoo.so", 0x1234, &error);
  EXPECT_EQ(f.function, "libfoo.so+0x1234");
  EXPECT_EQ(f.module, "libfoo.so");
  EXPECT_FALSE(error.empty());
}
