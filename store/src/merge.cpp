// `rtrace merge` — placeholder until issue 7 lands.
#include "../../cli/subcommands.hpp"

#include <cstdio>

namespace rtrace::cli {
int merge_main(int, char**) {
  std::fprintf(stderr, "rtrace merge: not implemented yet\n");
  return 2;
}
}  // namespace rtrace::cli
