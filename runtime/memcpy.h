#pragma once
// Byte copies between host memory and device addresses.
#include <cstddef>
#include <cstdint>

namespace tocl {

// Host -> device. Returns once the host memory may be reused.
void copy_host_to_device(int device, int stream, void* dst, const void* src, size_t bytes);
// Device -> host. Blocks until the bytes are in `dst`.
void copy_device_to_host(int device, int stream, void* dst, const void* src, size_t bytes);
// Device -> device, same device, ordered on the stream (asynchronous).
void copy_device_to_device(int device, int stream, void* dst, const void* src, size_t bytes);
// Fills `bytes` at `dst` with a repeated pattern of 1, 2, 4 or 8 bytes (asynchronous).
void fill_device(int device, int stream, void* dst, const void* pattern, size_t pattern_size, size_t bytes);

}  // namespace tocl
