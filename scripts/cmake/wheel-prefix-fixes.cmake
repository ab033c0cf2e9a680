# Work-arounds for building a ROS 2 package against the ROS 2 PyPI wheels
# (a virtualenv prefix) instead of a system install. Injected by
# scripts/build-interfaces.sh with -DCMAKE_PROJECT_INCLUDE=<this file>, so the
# package's own CMakeLists.txt stays the standard one; never used by colcon
# on a real ROS installation.
#
# The wheels' exported CMake targets (e.g.
# builtin_interfaces::builtin_interfaces__rosidl_generator_py) carry the
# include path of the machine that built them,
# /opt/python/cp311-cp311/include/python3.11, in INTERFACE_INCLUDE_DIRECTORIES.
# CMake's generate step rejects an imported target with a non-existent include
# path. The real Python headers come from FindPython3 (Python3::Module), so the
# stale entry is simply removed. The fix runs deferred, at the end of the
# top-level directory, when every find_package() has created its targets.

function(_rd_strip_missing_include_dirs)
  get_property(_targets DIRECTORY "${CMAKE_SOURCE_DIR}" PROPERTY IMPORTED_TARGETS)
  foreach(_target IN LISTS _targets)
    get_target_property(_type ${_target} TYPE)
    get_target_property(_dirs ${_target} INTERFACE_INCLUDE_DIRECTORIES)
    if(NOT _dirs)
      continue()
    endif()
    set(_kept "")
    set(_changed FALSE)
    foreach(_dir IN LISTS _dirs)
      # Keep generator expressions and relative entries untouched.
      if(NOT _dir MATCHES "\\$<" AND IS_ABSOLUTE "${_dir}" AND NOT EXISTS "${_dir}")
        message(STATUS "wheel-prefix-fixes: ${_target}: dropped missing include dir ${_dir}")
        set(_changed TRUE)
      else()
        list(APPEND _kept "${_dir}")
      endif()
    endforeach()
    if(_changed)
      set_target_properties(${_target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_kept}")
    endif()
  endforeach()
endfunction()

cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _rd_strip_missing_include_dirs)
