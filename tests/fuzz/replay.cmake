# Regression replay of the fuzz inputs in every build (gcc too, no libFuzzer):
# each target's entry point is linked with replay_main.cpp into
# fuzz_replay_<target>, and a ctest test (label unit) feeds it every file under
# tests/fuzz/regressions/<target>/ and tests/fuzz/corpus/<target>/.
#
# Included from tests/faults/CMakeLists.txt because tests/CMakeLists.txt
# adds tests/fuzz only for RTRACE_ENABLE_FUZZ builds; guarded so that a build
# with both includes it once.
include_guard(GLOBAL)
include(${CMAKE_CURRENT_LIST_DIR}/targets.cmake)
set(_fz_dir ${CMAKE_CURRENT_LIST_DIR})
foreach(_entry ${RTRACE_FUZZ_TARGETS})
  rtrace_fuzz_target_info("${_entry}" _name _src _libs)
  rtrace_fuzz_target_available("${_libs}" _available)
  if(NOT _available)
    continue()
  endif()
  add_executable(fuzz_replay_${_name} ${_fz_dir}/${_src} ${_fz_dir}/replay_main.cpp)
  target_include_directories(fuzz_replay_${_name} PRIVATE ${_fz_dir})
  target_link_libraries(fuzz_replay_${_name} PRIVATE ${_libs})
  rtrace_warnings(fuzz_replay_${_name})
  set(_inputs)
  foreach(_kind regressions corpus)
    if(IS_DIRECTORY ${_fz_dir}/${_kind}/${_name})
      list(APPEND _inputs ${_fz_dir}/${_kind}/${_name})
    endif()
  endforeach()
  if(_inputs)
    add_test(NAME fuzz_replay_${_name} COMMAND fuzz_replay_${_name} ${_inputs})
    set_tests_properties(fuzz_replay_${_name} PROPERTIES LABELS unit TIMEOUT 300
      ENVIRONMENT "RTRACE_FUZZ_TMPDIR=${CMAKE_CURRENT_BINARY_DIR}")
  endif()
endforeach()
