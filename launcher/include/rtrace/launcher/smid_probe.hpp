// sms_achieved as a measurement: rtrace-smid-probe (launcher/tools/smid_probe.cu)
// run under exactly a point's partition environment counts the distinct SMs
// its blocks ran on (docs/launcher.md, "Measured SMs").
#pragma once

#include "rtrace/launcher/point_command.hpp"

#include <string>

namespace rtrace::launcher {

struct SmsMeasurement {
  int sms = -1;      // distinct SMs seen; -1 when the probe could not run
  std::string log;   // for the point's log: why not, or a mismatch warning ("" when it matched)
};

// <bin>/rtrace-smid-probe next to rtrace, or the fake device's probe (test seam).
std::string smid_probe_path(const LaunchSetup& s);
// The point's environment without the tracer's variables (the probe must not
// write trace data into the point's scratch), with its partition variables.
Environment probe_environment(const LaunchSetup& s, const PointCommand& cmd);
// "sms_achieved=N device_sms=M" -> N; -1 when absent or malformed.
int parse_smid_probe_output(const std::string& out);
// Runs the probe for one sms point. Never throws for probe failures.
SmsMeasurement measure_point_sms(const LaunchSetup& s, const PointCommand& cmd, double timeout_s = 120);

}  // namespace rtrace::launcher
