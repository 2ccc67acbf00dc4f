# SPDX-License-Identifier: MIT
# Build facts the benchmark results record ("percore": compiler, flags,
# git_revision). Included by the top-level CMakeLists.txt after the object
# libraries.
#
# The flags are known at configure time; the git revision changes with every
# commit, so a small target rewrites percore_build.h at each build, and only
# when its text changes: a new commit recompiles one file, not the library.
get_directory_property(pc_bi_options COMPILE_OPTIONS)
string(TOUPPER "${CMAKE_BUILD_TYPE}" pc_bi_type)
string(JOIN " " pc_bi_flags ${CMAKE_C_FLAGS} ${CMAKE_C_FLAGS_${pc_bi_type}} ${pc_bi_options})
string(STRIP "${pc_bi_flags}" pc_bi_flags)
set(pc_bi_dir ${PROJECT_BINARY_DIR}/generated)
add_custom_target(percore_buildinfo
  COMMAND ${CMAKE_COMMAND} -DSRC=${PROJECT_SOURCE_DIR} -DOUT=${pc_bi_dir}/percore_build.h
          "-DFLAGS=${pc_bi_flags}" -P ${PROJECT_SOURCE_DIR}/cmake/git_revision.cmake
  BYPRODUCTS ${pc_bi_dir}/percore_build.h
  VERBATIM)
foreach(t percore_rt_objs percore_tools_objs)
  add_dependencies(${t} percore_buildinfo)
  target_include_directories(${t} PRIVATE ${pc_bi_dir})
endforeach()
