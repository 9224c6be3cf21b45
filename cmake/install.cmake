# `cmake --install build [--prefix P]` and the Debian packages (cpack -G DEB,
# scripts/make-deb). GNUInstallDirs places:
#   bin/                       dslaunch, dsagent, dstrain (dslaunch starts the
#                              other two from its own folder: no --agent-path)
#   lib/dslaunch/              libdstrain_cuda.so, dstrain's GPU plugin (CUDA
#                              builds; runtime/device_plugin.cc looks there)
#   share/dslaunch/docker/     what `dslaunch cluster up` builds its image from
#   share/doc/dslaunch/        README, BENCHMARKS, docs/, examples/
#   share/man/man1, man8       dslaunch(1), dstrain(1), dsagent(8) (help2man)
#   share/bash-completion/completions/dslaunch, share/zsh/vendor-completions/_dslaunch
# Components: `main` (package dslaunch) and `gpu` (package dslaunch-gpu).
# The programs link only Debian's shared libraries (ours are static), so the
# installed tree needs no RPATH: CMake drops the build tree's on install.
include(GNUInstallDirs)

install(TARGETS dslaunch dsagent dstrain RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT main)
if(DSLAUNCH_CUDA)
  install(TARGETS dstrain_cuda LIBRARY DESTINATION lib/dslaunch COMPONENT gpu)
endif()
install(DIRECTORY docker/ DESTINATION ${CMAKE_INSTALL_DATADIR}/dslaunch/docker COMPONENT main
        FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
install(PROGRAMS docker/entrypoint.sh DESTINATION ${CMAKE_INSTALL_DATADIR}/dslaunch/docker COMPONENT main)
install(FILES README.md BENCHMARKS.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT main)
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs COMPONENT main)
install(DIRECTORY examples/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples COMPONENT main)

# Man pages from each program's own --help and --version (help2man), so they
# never disagree with it.
find_program(HELP2MAN help2man)
if(HELP2MAN)
  set(man_dir ${PROJECT_BINARY_DIR}/man)
  set(man_pages)
  foreach(page "dslaunch;1;launch and supervise a distributed training job on many nodes"
               "dstrain;1;data-parallel / ZeRO trainer run by dslaunch"
               "dsagent;8;the per-node agent dslaunch starts")
    list(GET page 0 prog)
    list(GET page 1 section)
    list(GET page 2 what)
    set(out ${man_dir}/${prog}.${section}.gz)
    add_custom_command(OUTPUT ${out}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${man_dir}
      COMMAND ${HELP2MAN} --no-info --section=${section} --name=${what} --output=${man_dir}/${prog}.${section}
              $<TARGET_FILE:${prog}>
      COMMAND gzip -n -9 -f ${man_dir}/${prog}.${section}
      DEPENDS ${prog} COMMENT "help2man ${prog}(${section})" VERBATIM)
    list(APPEND man_pages ${out})
    install(FILES ${out} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section} COMPONENT main)
  endforeach()
  add_custom_target(man ALL DEPENDS ${man_pages})
else()
  message(WARNING "help2man not found (scripts/install-deps installs it): no man pages")
endif()

# The Debian packages. The main package's dependencies are computed from the
# programs' shared libraries by dpkg-shlibdeps; the GPU plugin's CUDA and NCCL
# libraries come from NVIDIA's packages, which dpkg-shlibdeps does not know:
# scripts/make-deb computes them from the plugin's NEEDED entries.
set(CPACK_PACKAGE_NAME dslaunch)
set(CPACK_PACKAGE_VENDOR "dslaunch")
set(CPACK_PACKAGE_VERSION "${DSLAUNCH_VERSION_FULL}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "multi-node launcher and supervisor for distributed training")
set(CPACK_PACKAGE_CONTACT "dslaunch developers <dslaunch@localhost>")
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL main)
if(DSLAUNCH_CUDA)
  list(APPEND CPACK_COMPONENTS_ALL gpu)
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_STRIP_FILES ON)  # the build is RelWithDebInfo: 120 MB of debug info otherwise
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_MAIN_PACKAGE_NAME dslaunch)
set(CPACK_DEBIAN_MAIN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_MAIN_PACKAGE_RECOMMENDS "openssh-client")
set(CPACK_DEBIAN_MAIN_PACKAGE_SUGGESTS "pdsh, slurm-client, openmpi-bin, docker.io, docker-compose, python3-torch")
set(CPACK_DEBIAN_GPU_PACKAGE_NAME dslaunch-gpu)
set(CPACK_DEBIAN_GPU_PACKAGE_SHLIBDEPS OFF)
set(CPACK_COMPONENT_MAIN_DESCRIPTION "dslaunch, dsagent and dstrain: start a training job on many nodes (SSH, pdsh, Slurm, MPI, per node), supervise it with heartbeats and restart it from peer snapshots; dstrain is the built-in data-parallel / ZeRO trainer.")
set(CPACK_COMPONENT_GPU_DESCRIPTION "dstrain's GPU path (CUDA kernels, cuBLAS, NCCL), loaded by dstrain where a GPU may be used.")
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_COMPONENT_GPU_DEPENDS main)  # the plugin resolves the rest of dstrain against the executable
include(CPack)
