#pragma once
// How an OpenCL implementation vectorises a kernel on a CPU device: each work-item's own loops (PoCL's CPU
// driver), or across work-items, consecutive items in the lanes of one vector (Intel's CPU runtime, as GPUs
// run warps). The CPU forms' runs are laid out by it (runtime/kernel_forms.h's line_lanes).
#include <string>

#include "runtime/device.h"

namespace tocl {

struct ItemVectorisation {
  bool across_items = false;
  std::string reason;  // "PoCL vectorises a work-item's loops", "measured: ...", ...
};

// From the implementation where it is known; an unknown CPU implementation is measured once (a copy in both
// layouts) and the answer kept in the kernel cache directory, keyed by device, platform and driver version.
ItemVectorisation item_vectorisation(int device, const DeviceInfo& info);

// The measurement itself, made now (tests hold it against the known implementations): the two layouts'
// best times in microseconds, and the answer.
struct ItemVectorisationTimes {
  double per_item_us = 0, across_items_us = 0;
  bool across_items = false;
};
ItemVectorisationTimes measure_item_vectorisation(int device, const DeviceInfo& info);

}  // namespace tocl
