// The names a user probably meant by an unknown sweep axis: shared by the
// launcher (`--sweep rank=1,2`, `{thread}` placeholders) and `rtrace analyze
// --axis rank`, so both offer the same did-you-mean.
#pragma once

#include <string>
#include <vector>

namespace rtrace::store {

// The names a user probably meant by an unknown axis (or, `with_point`,
// placeholder) name: an alias ("np" -> ranks), a one-letter or case slip, or
// env:NAME for a name in capitals. Empty when nothing fits.
std::vector<std::string> likely_axis_names(const std::string& name, bool with_point = false);

}  // namespace rtrace::store
