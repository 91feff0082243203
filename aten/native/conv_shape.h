#pragma once
// The sizes of a 2-D convolution (a 1-D one with a height of 1), as the convolution kernels take them
// (kernels_cl/im2col.cl and conv_depthwise.cl's ConvShape: the same 13 longs in this order).
#include <cstdint>

namespace torch_opencl {

struct Shape {
  int64_t C, H, W, KH, KW, PH, PW, SH, SW, DH, DW, OH, OW;
};

}  // namespace torch_opencl
