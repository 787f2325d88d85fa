# Kiln's layers: one folder each, bottom to top, with the folders each may include directly.
# This table is the one statement of the dependency graph: the build follows it (kiln_add_layer
# below), tests/python/test_layers.py checks every #include against it, and docs/architecture.md
# shows it (the same test keeps the two equal).
#
# A layer sees the headers of its own folder and of the layers it depends on, directly or
# through them, and nothing else: each layer's sources are compiled with an include directory
# that holds links to exactly those folders (build/layers/<layer>/), not the repository root, so
# an #include of a layer above is a build error, "No such file or directory".
set(KILN_LAYERS abi support ir ingest runtime distributed lower engine codegen kernels compiler pjrt)
set(KILN_LAYER_DEPS_abi "")
set(KILN_LAYER_DEPS_support "")
set(KILN_LAYER_DEPS_ir support)
set(KILN_LAYER_DEPS_ingest ir support)
set(KILN_LAYER_DEPS_runtime abi ir support)
set(KILN_LAYER_DEPS_distributed runtime ir support)
set(KILN_LAYER_DEPS_lower runtime ir support)
set(KILN_LAYER_DEPS_engine lower runtime ir support)
set(KILN_LAYER_DEPS_codegen engine lower runtime ir support)
set(KILN_LAYER_DEPS_kernels codegen engine lower runtime ir support)
set(KILN_LAYER_DEPS_compiler kernels codegen engine lower ingest runtime ir support)
set(KILN_LAYER_DEPS_pjrt compiler kernels engine lower ingest distributed runtime ir support abi)

# The layers `layer` may see: itself and its dependencies' closure.
function(kiln_layer_closure layer out)
  set(_seen "")
  set(_todo ${layer})
  while(_todo)
    list(POP_FRONT _todo _l)
    if(NOT _l IN_LIST _seen)
      list(APPEND _seen ${_l})
      list(APPEND _todo ${KILN_LAYER_DEPS_${_l}})
    endif()
  endwhile()
  set(${out} ${_seen} PARENT_SCOPE)
endfunction()

# kiln_add_layer(<layer> <sources...>): OBJECT library kiln_<layer>_objs whose sources see only the
# folders kiln_layer_closure allows.
function(kiln_add_layer layer)
  set(_dir "${PROJECT_BINARY_DIR}/layers/${layer}")
  file(REMOVE_RECURSE "${_dir}")
  file(MAKE_DIRECTORY "${_dir}")
  kiln_layer_closure(${layer} _visible)
  foreach(_l IN LISTS _visible)
    file(CREATE_LINK "${PROJECT_SOURCE_DIR}/${_l}" "${_dir}/${_l}" SYMBOLIC)
  endforeach()
  add_library(kiln_${layer}_objs OBJECT ${ARGN})
  target_link_libraries(kiln_${layer}_objs PUBLIC kiln_options)
  target_include_directories(kiln_${layer}_objs PRIVATE "${_dir}")
endfunction()
