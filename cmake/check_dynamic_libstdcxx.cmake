# cmake -DLIBRARY=<shared object> -DCXX=<compiler> -P check_dynamic_libstdcxx.cmake
# Fails the build when LIBRARY does not load libstdc++ as a shared library (no NEEDED libstdc++.so.6):
# then it carries a copy of its own beside the one torch loads, and C++ exceptions and streams that cross
# between the two crash (seen as SIGSEGV while formatting an error's text).
find_program(READELF NAMES readelf)
if(NOT READELF)
  message(STATUS "readelf not found: not checking how ${LIBRARY} links libstdc++")
  return()
endif()
execute_process(COMMAND "${READELF}" -d "${LIBRARY}" OUTPUT_VARIABLE dynamic RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "readelf could not read ${LIBRARY}")
endif()
if(NOT dynamic MATCHES "NEEDED[^\n]*libstdc\\+\\+\\.so")
  get_filename_component(name "${LIBRARY}" NAME)
  message(FATAL_ERROR
    "${name} does not link libstdc++ dynamically: the compiler ${CXX} linked it statically, which gives the "
    "extension a second C++ runtime beside torch's and crashes the process when an error is raised. "
    "Build with the system compiler instead, e.g. CXX=/usr/bin/g++ CC=/usr/bin/gcc, after removing the build "
    "directory (build/).")
endif()
