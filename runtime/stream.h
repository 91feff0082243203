#pragma once
// One OpenCL context per selected device and a pool of in-order command
// queues on it. A stream is a queue's id: 0 is the default stream.
#include <cstdint>

#include "runtime/device.h"
#include "runtime/opencl.h"

namespace tocl {

// Streams 1..kStreamPoolSize-1 are handed out round-robin, as CUDA's pool does.
constexpr int kStreamPoolSize = 32;

// The device's context; created on first use.
cl_context context(int device);

// The in-order, profiling-enabled queue behind a stream id (0 = default).
cl_command_queue queue(int device, int stream_id);

// A stream id from the pool (never 0), round-robin.
int stream_from_pool(int device);

// The calling thread's current stream on `device` (0 until set), and setting it.
int current_stream(int device);
void set_current_stream(int device, int stream_id);

// The calling thread's current device (0 until set).
int current_device();
void set_current_device(int device);

// Waits for all work on one stream, or on every stream of a device.
void synchronize_stream(int device, int stream_id);
void synchronize_device(int device);

// True if every command on the stream has finished (does not block).
bool stream_query(int device, int stream_id);

}  // namespace tocl
