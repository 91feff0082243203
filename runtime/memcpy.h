#pragma once
// Byte copies between host memory and device addresses.
#include <cstddef>
#include <cstdint>

namespace tocl {

// Host -> device. Blocking: returns once the host memory may be reused. Not blocking:
// returns at once, and the caller keeps `src` alive and unchanged until the stream
// reaches the copy (pinned memory with host_record_use does).
void copy_host_to_device(int device, int stream, void* dst, const void* src, size_t bytes, bool blocking = true);
// Device -> host. Blocking: returns once the bytes are in `dst`. Not blocking: they are
// there once the stream reaches the copy (synchronize first).
void copy_device_to_host(int device, int stream, void* dst, const void* src, size_t bytes, bool blocking = true);
// Device -> device, same device, ordered on the stream (asynchronous).
void copy_device_to_device(int device, int stream, void* dst, const void* src, size_t bytes);
// Fills `bytes` at `dst` with a repeated pattern of 1, 2, 4, 8 or 16 bytes (asynchronous).
// Both run as kernels where the driver's own are slow (kernel_forms.h: bulk memory).
void fill_device(int device, int stream, void* dst, const void* pattern, size_t pattern_size, size_t bytes);

}  // namespace tocl
