# Makes DST a directory VALGRIND_LIB can name: a link to every file of
# Valgrind's libexec directory SRC (the core preload library, suppressions,
# the other tools), next to rtrace's own tool. Run at build and install time.
file(MAKE_DIRECTORY ${DST})
file(GLOB _entries RELATIVE ${SRC} ${SRC}/*)
foreach(_e ${_entries})
  if(_e MATCHES "^rtrace-")
    continue()
  endif()
  if(NOT EXISTS ${DST}/${_e} AND NOT IS_SYMLINK ${DST}/${_e})
    file(CREATE_LINK ${SRC}/${_e} ${DST}/${_e} SYMBOLIC)
  endif()
endforeach()
