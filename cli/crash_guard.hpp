// Runs a subcommand that reads files handed to it by the user (`analyze`,
// `merge`) in a child process, so that a crash inside libhdf5 on a damaged
// file -- libhdf5 1.10 trusts the file's global-heap references and can
// SEGV or abort on corrupted ones (docs/reliability.md) -- becomes one line
// naming the file and exit status 2, not a core dump without a word.
#pragma once

namespace rtrace::cli {

// Returns `command(argc, argv)`'s exit status. The child runs the command;
// the parent only waits, forwards SIGTERM/SIGHUP to it (SIGINT and SIGQUIT
// from the terminal reach both) and reports a crash. `name` is the
// subcommand's name for messages ("rtrace analyze").
int run_crash_guarded(const char* name, int (*command)(int, char**), int argc, char** argv);

}  // namespace rtrace::cli
