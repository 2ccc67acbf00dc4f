# SPDX-License-Identifier: MIT
# What installs beside the library and the command: the license, the
# examples, the documents of docs/ (ARCHITECTURE.md and its neighbours),
# the manual pages and the bash completion; and the API reference in HTML
# (target docs).
#   - section 1 pages and the completion: scripts/manpages.py, from the
#     built percore's own --help, so they say what the program says;
#   - section 3 pages, one per public function: scripts/apidoc.py, from the
#     contract comments of the public headers;
#   - HTML: Doxygen (when found) over the same headers, through
#     scripts/apidoc.py filter (cmake/Doxyfile.in). The configured Doxyfile
#     is written even without Doxygen: test_api_doxygen uses it.
# Included by the top-level CMakeLists.txt after the programs.
include(GNUInstallDirs)
# docs/ whole, so that ARCHITECTURE.md's links to its neighbours hold
file(GLOB pc_doc_pages CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE ${pc_doc_pages} DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)

find_package(Python3 COMPONENTS Interpreter)
if(CMAKE_CROSSCOMPILING OR NOT Python3_Interpreter_FOUND)
  message(STATUS "percore: no manual pages (cross build or no python3)")
  return()
endif()
set(pc_doc_dir ${PROJECT_BINARY_DIR}/doc)
file(GLOB pc_public_headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/include/percore/*.h)

# ---- the API reference ------------------------------------------------------
set(PC_DOXY_OUT ${pc_doc_dir}/api)
configure_file(${PROJECT_SOURCE_DIR}/cmake/Doxyfile.in ${PC_DOXY_OUT}/Doxyfile @ONLY)
add_custom_command(
  OUTPUT ${pc_doc_dir}/man3.stamp
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${pc_doc_dir}/man3
  COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/apidoc.py man
          --out ${pc_doc_dir} --version ${PROJECT_VERSION} ${pc_public_headers}
  COMMAND ${CMAKE_COMMAND} -E touch ${pc_doc_dir}/man3.stamp
  DEPENDS ${pc_public_headers} ${PROJECT_SOURCE_DIR}/scripts/apidoc.py
  COMMENT "Section 3 manual pages from the public headers"
  VERBATIM)
add_custom_target(percore_api_man ALL DEPENDS ${pc_doc_dir}/man3.stamp)
install(DIRECTORY ${pc_doc_dir}/man3/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man3
        FILES_MATCHING PATTERN "*.3")

find_package(Doxygen)
if(DOXYGEN_FOUND)
  add_custom_command(
    OUTPUT ${PC_DOXY_OUT}/html/index.html
    COMMAND ${DOXYGEN_EXECUTABLE} ${PC_DOXY_OUT}/Doxyfile
    DEPENDS ${pc_public_headers} ${PROJECT_SOURCE_DIR}/scripts/apidoc.py
            ${PROJECT_SOURCE_DIR}/cmake/Doxyfile.in
    COMMENT "API reference (HTML) in ${PC_DOXY_OUT}/html"
    VERBATIM)
  # Part of every plain build (make, make bench, make install); the
  # instrumented builds of make test leave it to test_api_doxygen, which
  # runs Doxygen itself.
  if(PC_SANITIZE)
    add_custom_target(docs DEPENDS ${PC_DOXY_OUT}/html/index.html)
  else()
    add_custom_target(docs ALL DEPENDS ${PC_DOXY_OUT}/html/index.html)
  endif()
  install(DIRECTORY ${PC_DOXY_OUT}/html/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/html OPTIONAL)
else()
  message(STATUS "percore: no HTML API reference (doxygen not found)")
endif()

# ---- the command's pages and completion ---------------------------------------
if(NOT TARGET percore)
  return()  # the fuzz build has no programs
endif()
add_custom_command(
  OUTPUT ${pc_doc_dir}/man1/percore.1 ${pc_doc_dir}/bash-completion/percore
  COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/manpages.py
          --percore $<TARGET_FILE:percore> --out ${pc_doc_dir}
          --version ${PROJECT_VERSION}
  DEPENDS percore ${PROJECT_SOURCE_DIR}/scripts/manpages.py
  COMMENT "Manual pages and bash completion from percore --help"
  VERBATIM)
add_custom_target(percore_docs ALL
  DEPENDS ${pc_doc_dir}/man1/percore.1 ${pc_doc_dir}/bash-completion/percore)
install(DIRECTORY ${pc_doc_dir}/man1/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
        FILES_MATCHING PATTERN "*.1")
install(FILES ${pc_doc_dir}/bash-completion/percore
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
