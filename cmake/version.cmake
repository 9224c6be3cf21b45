# DSLAUNCH_VERSION_FULL: the version the programs print and the packages
# carry. From `git describe` when the source is a git checkout:
#   a tag vX.Y.Z             -> X.Y.Z
#   N commits after vX.Y.Z   -> X.Y.Z+N.g<hash>
#   no tag                   -> PROJECT_VERSION~git<N>.g<hash> (sorts before the release)
# with ".dirty" when the tree has uncommitted changes; PROJECT_VERSION
# otherwise (a source tarball). Valid as a Debian upstream version.
set(DSLAUNCH_VERSION_FULL "${PROJECT_VERSION}")
find_package(Git QUIET)
if(GIT_FOUND AND EXISTS "${PROJECT_SOURCE_DIR}/.git")
  execute_process(COMMAND "${GIT_EXECUTABLE}" describe --tags --match "v[0-9]*" --long --dirty=.dirty
                  WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}" OUTPUT_VARIABLE described
                  RESULT_VARIABLE tag_rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(tag_rc EQUAL 0 AND described MATCHES "^v([0-9][^-]*)-([0-9]+)-g([0-9a-f]+)(\\.dirty)?$")
    set(DSLAUNCH_VERSION_FULL "${CMAKE_MATCH_1}")
    if(NOT CMAKE_MATCH_2 EQUAL 0)
      string(APPEND DSLAUNCH_VERSION_FULL "+${CMAKE_MATCH_2}.g${CMAKE_MATCH_3}")
    endif()
    string(APPEND DSLAUNCH_VERSION_FULL "${CMAKE_MATCH_4}")
  else()
    execute_process(COMMAND "${GIT_EXECUTABLE}" rev-list --count HEAD
                    WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}" OUTPUT_VARIABLE count
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    execute_process(COMMAND "${GIT_EXECUTABLE}" describe --always --abbrev=10 --dirty=.dirty
                    WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}" OUTPUT_VARIABLE hash
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(count AND hash)
      set(DSLAUNCH_VERSION_FULL "${PROJECT_VERSION}~git${count}.g${hash}")
    endif()
  endif()
endif()
