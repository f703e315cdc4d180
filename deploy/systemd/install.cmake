# Install rules of deploy/systemd (docs/how-to/deploy.md, "On hosts with systemd"), included by the root
# CMakeLists.txt: the units into <prefix>/lib/systemd/system, the tunebus user into
# <prefix>/lib/sysusers.d/tunebus.conf, and the example settings into /etc/tunebus (an absolute
# destination: with the prefix /usr, as the package has it, the units find them there; DESTDIR
# still applies). The units run /usr/bin/tunebus-<service>, the names the package gives the
# build's targets checkpoint-store, resource-manager, scheduler and trial-worker.
install(FILES
    ${CMAKE_CURRENT_LIST_DIR}/tunebus.target
    ${CMAKE_CURRENT_LIST_DIR}/tunebus-checkpoint-store.service
    ${CMAKE_CURRENT_LIST_DIR}/tunebus-resource-manager.service
    ${CMAKE_CURRENT_LIST_DIR}/tunebus-scheduler.service
    ${CMAKE_CURRENT_LIST_DIR}/tunebus-trial-worker@.service
  DESTINATION lib/systemd/system)
install(FILES ${CMAKE_CURRENT_LIST_DIR}/tunebus.sysusers
  DESTINATION lib/sysusers.d RENAME tunebus.conf)
install(FILES
    ${CMAKE_CURRENT_LIST_DIR}/env/checkpoint-store.env
    ${CMAKE_CURRENT_LIST_DIR}/env/resource-manager.env
    ${CMAKE_CURRENT_LIST_DIR}/env/scheduler.env
    ${CMAKE_CURRENT_LIST_DIR}/env/trial-worker.env
  DESTINATION /etc/tunebus)
