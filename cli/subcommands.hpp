// Entry points of the `rtrace` subcommands. Each lives in its component's
// library; argv[0] is "rtrace <subcommand>". Return value = process exit code.
#pragma once

namespace rtrace::cli {
int run_main(int argc, char** argv);       // launcher: `rtrace [run] --sweep ... -- app`
int ert_main(int argc, char** argv);       // ert
int analyze_main(int argc, char** argv);   // analysis
int validate_main(int argc, char** argv);  // store
int merge_main(int argc, char** argv);     // store
int pack_main(int argc, char** argv);      // store
int counts_main(int argc, char** argv);    // counts: `rtrace counts -o FILE -- app` (the counting pass)
}  // namespace rtrace::cli
