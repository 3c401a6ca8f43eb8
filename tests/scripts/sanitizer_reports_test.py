#!/usr/bin/env python3
"""scripts/sanitizer_reports.py on reports kept in sanitizer-reports/:
  asan.orted.25264   the report that failed CI on 2026-11-29 (stack verbatim;
                     named as log_exe_name=1 names it): a singleton's orted
                     whose unwinder went astray from the unloaded plugin's PC
                     (libc, libdw, __run_exit_handlers). The old rule looked
                     for orted's frames in the stack and counted it.
  asan.25264         the same text without a process name: whose it is cannot
                     be told, so it counts.
  asan.orted.13969   the same crash reproduced here (2026-11-29, third of six
                     repeats of sanitize.sh's MPI pass), unwound through
                     opal_finalize and orte_daemon.
  asan.orted.13970   that report with a frame of rtrace's tracer in it: counts.
  asan.orted.778     an orted report with an unsymbolised frame of
                     librtrace_tracer.so: counts.
  asan.orted.27653   CI, 2026-11-29 (verbatim): orted's exit faulted in
                     ASan's module destructor of librtrace_tracer.so
                     (`_sub_D_00099_0`, unregistering its globals): ASan's
                     code, not rtrace's; the old rule counted it.
  asan.sampled_omp_app.777  a report of one of rtrace's test apps: counts.
  asan.rtrace.4242   an empty log (the process reported nothing): no line.
"""
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(ROOT, "scripts", "sanitizer_reports.py")
REPORTS = os.path.join(HERE, "sanitizer-reports")


def verdicts(*names):
    out = subprocess.run([sys.executable, SCRIPT] + [os.path.join(REPORTS, n) for n in names],
                         check=True, capture_output=True, text=True).stdout
    rows = {}
    for line in out.splitlines():
        fields = line.split("\t")
        rows[os.path.basename(fields[1])] = (fields[0], fields[2])
    return rows


class SanitizerReports(unittest.TestCase):
    def test_an_orted_report_is_known_by_its_name_however_it_was_unwound(self):
        self.assertEqual(verdicts("asan.orted.25264")["asan.orted.25264"], ("ignored", "orted"))
        self.assertEqual(verdicts("asan.orted.13969")["asan.orted.13969"], ("ignored", "orted"))

    def test_asans_module_destructor_in_rtraces_library_is_not_rtraces_code(self):
        self.assertEqual(verdicts("asan.orted.27653")["asan.orted.27653"], ("ignored", "orted"))

    def test_a_report_without_a_process_name_counts(self):
        self.assertEqual(verdicts("asan.25264")["asan.25264"], ("counted", "?"))

    def test_an_orted_report_with_rtrace_code_in_it_counts(self):
        rows = verdicts("asan.orted.13970", "asan.orted.778")
        self.assertEqual(rows["asan.orted.13970"], ("counted", "orted"))
        self.assertEqual(rows["asan.orted.778"], ("counted", "orted"))

    def test_an_apps_report_counts_and_an_empty_log_is_no_report(self):
        rows = verdicts("asan.sampled_omp_app.777", "asan.rtrace.4242")
        self.assertEqual(rows, {"asan.sampled_omp_app.777": ("counted", "sampled_omp_app")})

    def test_an_unreadable_file_fails(self):
        r = subprocess.run([sys.executable, SCRIPT, os.path.join(REPORTS, "no-such-file")],
                           capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no-such-file", r.stderr)


if __name__ == "__main__":
    unittest.main()
