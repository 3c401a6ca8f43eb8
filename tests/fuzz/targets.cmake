# The fuzz targets, their sources and the libraries they need. A target whose
# component is not part of this build (RTRACE_COMPONENTS) is left out.
#   name | source | libraries (;-list, a target that must exist first)
set(RTRACE_FUZZ_TARGETS
  "sweep_spec|sweep_spec.cpp|rtrace_launcher"
  "run_file|run_file.cpp|rtrace_store"
  "tracer_strings|tracer_strings.cpp|rtrace_tracer_core"
  "ert_import|ert_import.cpp|rtrace_launcher"
  "options_json|options_json.cpp|rtrace_launcher"
  "analysis_load|analysis_load.cpp|rtrace_analysis")

# rtrace_fuzz_target_info(ENTRY NAME SRC LIBS): splits one entry.
macro(rtrace_fuzz_target_info entry name src libs)
  string(REPLACE "|" ";" _fz_parts "${entry}")
  list(GET _fz_parts 0 ${name})
  list(GET _fz_parts 1 ${src})
  list(GET _fz_parts 2 ${libs})
  string(REPLACE "," ";" ${libs} "${${libs}}")
endmacro()

# True when every library of a target exists in this build.
function(rtrace_fuzz_target_available libs out)
  set(_ok ON)
  foreach(_lib ${libs})
    if(NOT TARGET ${_lib})
      set(_ok OFF)
    endif()
  endforeach()
  set(${out} ${_ok} PARENT_SCOPE)
endfunction()
