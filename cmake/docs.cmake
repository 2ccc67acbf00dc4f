# SPDX-License-Identifier: MIT
# What installs beside the library and the command: the license, the manual
# pages and the bash completion. The pages and the completion are made at
# build time by scripts/manpages.py from the built percore's own --help, so
# they say what the program says. Included by the top-level CMakeLists.txt
# after the programs.
include(GNUInstallDirs)
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})

if(NOT TARGET percore)
  return()  # the fuzz build has no programs
endif()
find_package(Python3 COMPONENTS Interpreter)
if(CMAKE_CROSSCOMPILING OR NOT Python3_Interpreter_FOUND)
  message(STATUS "percore: no manual pages (cross build or no python3)")
  return()
endif()
set(pc_doc_dir ${PROJECT_BINARY_DIR}/doc)
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
