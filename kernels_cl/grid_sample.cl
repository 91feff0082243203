// grid_sampler_2d forward and backward with the formulas of CPU's vectorised kernel
// (aten/src/ATen/native/cpu/GridSamplerKernel.cpp: ComputeLocation, ApplyGridSample), in ACC precision.
// input (N, C, IH, IW), grid (N, OH, OW, 2) holding (x, y) in [-1, 1], output (N, C, OH, OW), all contiguous.
// Modes as ATen's enums: interpolation 0 bilinear, 1 nearest, 2 bicubic; padding 0 zeros, 1 border,
// 2 reflection.

typedef struct {
  long N, C, IH, IW, OH, OW;
  int interpolation, padding, align_corners, taps;  // taps: gradient taps per output point (4, 1 or 16)
} GridSample;

inline bool inside(ACC y, ACC x, long H, long W) { return y > -1 && y < (ACC)H && x > -1 && x < (ACC)W; }

// The grid value `in` (in [-1, 1] for the input's extent) as a position along a dim of `size`, and
// d(position)/d(in) in *scale.
inline ACC unnormalize(ACC in, long size, int align_corners, ACC* scale) {
  *scale = align_corners ? (ACC)(size - 1) / 2 : (ACC)size / 2;
  return align_corners ? (in + 1) * *scale : (in + 1) * *scale - (ACC)0.5;
}

// Position x with the padding applied (CPU's compute_coordinates), times the incoming gradient g scaled by
// d(result)/d(x) in *grad.
inline ACC pad_coordinate(ACC x, long size, int padding, int align_corners, ACC g, ACC* grad) {
  const ACC max_val = (ACC)(size - 1);
  if (padding == 2) {  // reflection about [0, size - 1] (align_corners) or [-0.5, size - 0.5]
    const ACC twice_span = align_corners ? (ACC)(size - 1) * 2 : (ACC)size * 2;
    if (twice_span == 0) {
      x = 0;
      g = 0;
    } else {
      const ACC shifted = align_corners ? x : x + (ACC)0.5;
      const ACC a = fabs(shifted);
      const ACC extra = a - trunc(a / twice_span) * twice_span, reflected = twice_span - extra;
      const bool flip = extra > reflected;
      x = (flip ? reflected : extra) - (align_corners ? (ACC)0 : (ACC)0.5);
      g = (flip != (shifted < 0)) ? -g : g;
    }
  }
  if (padding != 0) {  // border and reflection clip to [0, size - 1] (NaN to 0, as CPU's); the borders count
                        // as outside for the gradient
    const ACC lo = fmax(x, (ACC)0);
    x = fmin(lo, max_val);
    g = (lo != 0 && x != max_val) ? g : (ACC)0;
  }
  *grad = g;
  return x;
}

// Unnormalized source coordinate of `in` with its padding applied (bilinear, nearest), and d/d(in) in *grad.
inline ACC source_coordinate(ACC in, long size, int padding, int align_corners, ACC* grad) {
  ACC scale;
  const ACC x = unnormalize(in, size, align_corners, &scale);
  return pad_coordinate(x, size, padding, align_corners, scale, grad);
}

// CPU's cubic convolution weights (A = -0.75) of the taps at floor - 1 .. floor + 2 for fraction t, and their
// derivatives in t.
inline void cubic_coefficients(ACC t, ACC* c) {
  const ACC A = -0.75;
  ACC x = t + 1;
  c[0] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
  x = t;
  c[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
  x = 1 - t;
  c[2] = ((A + 2) * x - (A + 3)) * x * x + 1;
  x = 2 - t;
  c[3] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
}
inline void cubic_coefficients_grad(ACC t, ACC* c) {
  const ACC A = -0.75;
  ACC x = -1 - t;
  c[0] = (-3 * A * x - 10 * A) * x - 8 * A;
  x = -t;
  c[1] = (-3 * (A + 2) * x - 2 * (A + 3)) * x;
  x = 1 - t;
  c[2] = (3 * (A + 2) * x - 2 * (A + 3)) * x;
  x = 2 - t;
  c[3] = (3 * A * x - 10 * A) * x + 8 * A;
}

// Position of the bicubic tap at unpadded (tx, ty) after the padding (CPU's get_value_bounded), or -1.
inline long cubic_tap(ACC tx, ACC ty, GridSample p) {
  ACC unused;
  const ACC x = pad_coordinate(tx, p.IW, p.padding, p.align_corners, 0, &unused);
  const ACC y = pad_coordinate(ty, p.IH, p.padding, p.align_corners, 0, &unused);
  return inside(y, x, p.IH, p.IW) ? (long)y * p.IW + (long)x : -1;
}

// The four bilinear taps of (x, y): positions (y * IW + x, or -1 outside the input) and weights nw, ne, sw, se.
inline void bilinear_taps(ACC x, ACC y, GridSample p, long* at, ACC* w) {
  const ACC xw = floor(x), yn = floor(y);
  const ACC dw = x - xw, de = 1 - dw, dn = y - yn, ds = 1 - dn;
  w[0] = ds * de;
  w[1] = ds * dw;
  w[2] = dn * de;
  w[3] = dn * dw;
  for (int t = 0; t < 4; ++t) {
    const ACC ty = yn + (t >> 1), tx = xw + (t & 1);
    at[t] = inside(ty, tx, p.IH, p.IW) ? (long)ty * p.IW + (long)tx : -1;
  }
}

// One work-item per output element.
__kernel void grid_sampler_2d_forward(__global T_T* out, ulong out_offset, __global const T_T* in, ulong in_offset,
                                      __global const T_T* grid, ulong grid_offset, long total, GridSample p) {
  const long e = get_global_id(0);
  if (e >= total) return;
  const long points = p.OH * p.OW, pt = e % points, c = (e / points) % p.C, n = e / (points * p.C);
  const long g = grid_offset + (n * points + pt) * 2;
  __global const T_T* plane = in + in_offset + (n * p.C + c) * p.IH * p.IW;
  ACC v = 0;
  if (p.interpolation == 2) {  // rows of four taps along x, then those four along y, as CPU
    ACC unused, cx[4], cy[4];
    const ACC x = unnormalize(LOAD_T(grid, g), p.IW, p.align_corners, &unused);
    const ACC y = unnormalize(LOAD_T(grid, g + 1), p.IH, p.align_corners, &unused);
    const ACC ix = floor(x), iy = floor(y);
    cubic_coefficients(x - ix, cx);
    cubic_coefficients(y - iy, cy);
    for (int j = 0; j < 4; ++j) {
      ACC row = 0;
      for (int i = 0; i < 4; ++i) {
        const long at = cubic_tap(ix - 1 + i, iy - 1 + j, p);
        row += cx[i] * (at >= 0 ? LOAD_T(plane, at) : (ACC)0);
      }
      v += cy[j] * row;
    }
    STORE_T(out, out_offset + e, v);
    return;
  }
  ACC unused;
  const ACC x = source_coordinate(LOAD_T(grid, g), p.IW, p.padding, p.align_corners, &unused);
  const ACC y = source_coordinate(LOAD_T(grid, g + 1), p.IH, p.padding, p.align_corners, &unused);
  if (p.interpolation == 1) {
    const ACC xr = rint(x), yr = rint(y);  // half to even, as CPU's round
    if (inside(yr, xr, p.IH, p.IW)) v = LOAD_T(plane, (long)yr * p.IW + (long)xr);
  } else {
    long at[4];
    ACC w[4];
    bilinear_taps(x, y, p, at, w);
    for (int t = 0; t < 4; ++t) v += (at[t] >= 0 ? LOAD_T(plane, at[t]) : (ACC)0) * w[t];
  }
  STORE_T(out, out_offset + e, v);
}

// One work-item per output point (n, oh, ow): grad_grid from the channels' values and gradients, and, for the
// input's gradient, the point's taps: row n * IH * IW + position of a (N * IH * IW + 1, C) table (the last
// row, N * IH * IW, for a tap outside the input) and weight, which the host scales by grad_output and sums.
__kernel void grid_sampler_2d_backward(__global T_T* grad_grid, ulong gg_offset, __global long* tap_rows,
                                       ulong rows_offset, __global T_T* tap_weights, ulong weights_offset,
                                       __global const T_T* grad_out, ulong go_offset,
                                       __global const T_T* in, ulong in_offset, __global const T_T* grid,
                                       ulong grid_offset, long total, GridSample p, int want_taps) {
  const long e = get_global_id(0);
  if (e >= total) return;
  const long points = p.OH * p.OW, pt = e % points, n = e / points;
  const long plane_size = p.IH * p.IW, dummy = p.N * plane_size;
  if (p.interpolation == 2) {
    ACC gx_mult, gy_mult, cx[4], cy[4], dx[4], dy[4];
    const ACC x = unnormalize(LOAD_T(grid, grid_offset + 2 * e), p.IW, p.align_corners, &gx_mult);
    const ACC y = unnormalize(LOAD_T(grid, grid_offset + 2 * e + 1), p.IH, p.align_corners, &gy_mult);
    const ACC ix = floor(x), iy = floor(y);
    cubic_coefficients(x - ix, cx);
    cubic_coefficients(y - iy, cy);
    cubic_coefficients_grad(x - ix, dx);
    cubic_coefficients_grad(y - iy, dy);
    long at[16];
    for (int t = 0; t < 16; ++t) at[t] = cubic_tap(ix - 1 + (t >> 2), iy - 1 + (t & 3), p);  // t = 4 i + j
    ACC gx = 0, gy = 0;
    for (long c = 0; c < p.C; ++c) {
      __global const T_T* plane = in + in_offset + (n * p.C + c) * plane_size;
      const ACC g = LOAD_T(grad_out, go_offset + (n * p.C + c) * points + pt);
      for (int t = 0; t < 16; ++t) {
        const ACC v = at[t] >= 0 ? LOAD_T(plane, at[t]) : (ACC)0;
        gx -= v * g * dx[t >> 2] * cy[t & 3];
        gy -= v * g * dy[t & 3] * cx[t >> 2];
      }
    }
    if (want_taps)
      for (int t = 0; t < 16; ++t) {
        tap_rows[rows_offset + 16 * e + t] = at[t] >= 0 ? n * plane_size + at[t] : dummy;
        STORE_T(tap_weights, weights_offset + 16 * e + t, cx[t >> 2] * cy[t & 3]);
      }
    STORE_T(grad_grid, gg_offset + 2 * e, gx * gx_mult);
    STORE_T(grad_grid, gg_offset + 2 * e + 1, gy * gy_mult);
    return;
  }
  ACC gx_mult, gy_mult;
  const ACC x = source_coordinate(LOAD_T(grid, grid_offset + 2 * e), p.IW, p.padding, p.align_corners, &gx_mult);
  const ACC y = source_coordinate(LOAD_T(grid, grid_offset + 2 * e + 1), p.IH, p.padding, p.align_corners, &gy_mult);
  ACC gx = 0, gy = 0;
  if (p.interpolation == 1) {
    const ACC xr = rint(x), yr = rint(y);
    if (want_taps) {
      tap_rows[rows_offset + e] = inside(yr, xr, p.IH, p.IW) ? n * plane_size + (long)yr * p.IW + (long)xr : dummy;
      STORE_T(tap_weights, weights_offset + e, (ACC)1);
    }
  } else {
    long at[4];
    ACC w[4];
    bilinear_taps(x, y, p, at, w);
    const ACC dw = x - floor(x), de = 1 - dw, dn = y - floor(y), ds = 1 - dn;
    for (long c = 0; c < p.C; ++c) {
      __global const T_T* plane = in + in_offset + (n * p.C + c) * plane_size;
      ACC v[4];
      for (int t = 0; t < 4; ++t) v[t] = at[t] >= 0 ? LOAD_T(plane, at[t]) : (ACC)0;
      const ACC g = LOAD_T(grad_out, go_offset + (n * p.C + c) * points + pt);
      gx += ((v[1] - v[0]) * ds + (v[3] - v[2]) * dn) * g;
      gy += ((v[2] - v[0]) * de + (v[3] - v[1]) * dw) * g;
    }
    if (want_taps)
      for (int t = 0; t < 4; ++t) {
        tap_rows[rows_offset + 4 * e + t] = at[t] >= 0 ? n * plane_size + at[t] : dummy;
        STORE_T(tap_weights, weights_offset + 4 * e + t, w[t]);
      }
  }
  STORE_T(grad_grid, gg_offset + 2 * e, gx * gx_mult);
  STORE_T(grad_grid, gg_offset + 2 * e + 1, gy * gy_mult);
}
