# The public C++ headers of torch_opencl, for extensions that register their own opencl kernels
# (examples/custom_op/). They are the library's own headers, copied under torch_opencl/ with their
# includes rewritten ("runtime/x.h" -> "torch_opencl/runtime/x.h"), so an extension's include path
# gains one directory and no bare runtime/ or aten/ names. Each is public because a kernel author needs it:
set(TORCH_OPENCL_PUBLIC_HEADERS
  aten/extension.h                     # the entry point: includes the rest
  aten/kernel_support/opencl_tensor.h  # tensor -> (cl_mem, element offset), its device and current stream
  runtime/opencl.h                     # the OpenCL version every header agrees on
  runtime/error.h                      # tocl::Error, TOCL_CHECK for the extension's own OpenCL calls
  runtime/device.h                     # device_info(): cl_device_id, fp64/fp16, work-group limits
  runtime/stream.h                     # context(), queue(), current_stream(): the device's in-order queues
  runtime/program_cache.h              # get_program()/get_kernel(): built once, binaries kept on disk
  runtime/launch.h                     # set_args(), BufferArg, LocalArg, enqueue_1d/3d
  runtime/allocator.h                  # resolve(): device address -> buffer (used by opencl_tensor.h)
)

# Writes the rewritten copies into ${out_dir}/torch_opencl/ and returns their paths in ${out_var}.
function(torch_opencl_public_headers source_dir out_dir out_var)
  set(written "")
  foreach(header ${TORCH_OPENCL_PUBLIC_HEADERS})
    file(READ "${source_dir}/${header}" text)
    string(REGEX REPLACE "#include \"(runtime|aten)/" "#include \"torch_opencl/\\1/" text "${text}")
    if(header STREQUAL "aten/extension.h")
      set(target "${out_dir}/torch_opencl/extension.h")
    else()
      set(target "${out_dir}/torch_opencl/${header}")
    endif()
    file(WRITE "${target}.tmp" "${text}")
    file(COPY_FILE "${target}.tmp" "${target}" ONLY_IF_DIFFERENT)
    file(REMOVE "${target}.tmp")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${source_dir}/${header}")
    list(APPEND written "${target}")
  endforeach()
  set(${out_var} "${written}" PARENT_SCOPE)
endfunction()
