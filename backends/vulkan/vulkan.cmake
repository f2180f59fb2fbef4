# The Vulkan backend (registered in backends/backends.cmake). LITHE_VULKAN: AUTO (built when
# the Vulkan headers and glslc are found), ON (required) or OFF. The loader is dlopen'd at run
# time, so the library never links libvulkan and loads on machines without it.
find_path(LITHE_VULKAN_INCLUDE_DIR vulkan/vulkan.h)
find_program(LITHE_GLSLC glslc)
set(LITHE_VULKAN_ENABLED OFF)
set(LITHE_VULKAN_WHY_OFF "this library was built without the Vulkan backend (LITHE_VULKAN=OFF, or no vulkan/vulkan.h and glslc at build time)")
if(LITHE_VULKAN STREQUAL "ON" OR LITHE_VULKAN STREQUAL "AUTO")
  if(LITHE_VULKAN_INCLUDE_DIR AND LITHE_GLSLC)
    set(LITHE_VULKAN_ENABLED ON)
  elseif(LITHE_VULKAN STREQUAL "ON")
    message(FATAL_ERROR "LITHE_VULKAN=ON needs vulkan/vulkan.h (libvulkan-dev) and glslc (glslc)")
  else()
    message(STATUS "lithe: Vulkan backend off (no vulkan/vulkan.h or glslc)")
  endif()
endif()

if(LITHE_VULKAN_ENABLED)
  message(STATUS "lithe: Vulkan backend on (${LITHE_GLSLC})")
  set(LITHE_VK_DIR ${CMAKE_CURRENT_SOURCE_DIR}/backends/vulkan)
  set(LITHE_VK_SHADERS fill copy cast gemm gemm_tiled gemm_subgroup rows elementwise act softmax dropout optim cce reduce maxout
      layernorm index hash seq sparse recur conv graph bcast)
  set(LITHE_VK_SPV_DIR ${CMAKE_CURRENT_BINARY_DIR}/spirv)
  file(GLOB LITHE_VK_GLSL ${LITHE_VK_DIR}/shaders/*.glsl) # included by the .comp files
  set(spvs)
  foreach(s IN LISTS LITHE_VK_SHADERS)
    add_custom_command(
      OUTPUT ${LITHE_VK_SPV_DIR}/${s}.spv
      COMMAND ${CMAKE_COMMAND} -E make_directory ${LITHE_VK_SPV_DIR}
      COMMAND ${LITHE_GLSLC} --target-env=vulkan1.1 -O -Werror -o ${LITHE_VK_SPV_DIR}/${s}.spv
              ${LITHE_VK_DIR}/shaders/${s}.comp
      DEPENDS ${LITHE_VK_DIR}/shaders/${s}.comp ${LITHE_VK_GLSL}
      COMMENT "glslc ${s}.comp"
      VERBATIM)
    list(APPEND spvs ${LITHE_VK_SPV_DIR}/${s}.spv)
  endforeach()
  set(LITHE_VK_EMBED ${CMAKE_CURRENT_BINARY_DIR}/lithe_vk_shaders.c)
  add_custom_command(
    OUTPUT ${LITHE_VK_EMBED}
    COMMAND ${CMAKE_COMMAND} -DOUT=${LITHE_VK_EMBED} "-DNAMES=${LITHE_VK_SHADERS}" -DSPV_DIR=${LITHE_VK_SPV_DIR}
            -P ${LITHE_VK_DIR}/embed_spirv.cmake
    DEPENDS ${spvs} ${LITHE_VK_DIR}/embed_spirv.cmake
    COMMENT "embedding SPIR-V"
    VERBATIM)
  set_source_files_properties(${LITHE_VK_EMBED} PROPERTIES INCLUDE_DIRECTORIES ${LITHE_VK_DIR})
  list(APPEND LITHE_SOURCES backends/vulkan/vulkan_backend.c backends/vulkan/vulkan_memory.c backends/vulkan/table.c backends/vulkan/elementwise.c
       backends/vulkan/gemm.c backends/vulkan/act.c backends/vulkan/norm.c backends/vulkan/index.c backends/vulkan/seq.c
       backends/vulkan/graph.c ${LITHE_VK_EMBED})
endif()
