// Why a point failed, in one line, from the tails of its stderr and stdout: shared by the
// launcher's progress line and `rtrace analyze` so both say the same thing.
#pragma once

#include <string>

namespace rtrace::store {

// The line of an app's stderr tail that says why it failed:
//  * skipped: blank lines, rules (`-----`) and the notice blocks mpirun and
//    prterun frame with them, their `[host:pid] ...` aggregation notices
//    ("1 more process has sent help message ..."), and the tracer's own
//    `rtrace tracer[...]` lines;
//  * of the rest, the last line that reads like an error (`ERROR`, `Error`,
//    `error:`, `fatal`, `abort`, `exception`, `failed`, `cannot`, `unable to`,
//    `not found`, `no such file`, `permission denied`, `invalid`,
//    `segmentation fault`, `killed`, `terminate called`, `assertion`, a
//    Fortran `STOP`), else the last line.
// Control characters become '?', at most 200 characters (cut between words).
// "" when no line is left.
std::string failure_reason(const std::string& stderr_tail);
// Why a point failed from both of its tails: stderr's error-like line; else
// the last error-like line of stdout (LAMMPS prints `ERROR: Specified
// processors != physical processors` there and exits 1); else stderr's last
// line; "" when neither says anything.
std::string failure_reason(const std::string& stderr_tail, const std::string& stdout_tail);

}  // namespace rtrace::store
