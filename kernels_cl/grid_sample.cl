// grid_sampler_2d forward and backward with the formulas of CPU's vectorised kernel
// (aten/src/ATen/native/cpu/GridSamplerKernel.cpp: ComputeLocation, ApplyGridSample), in ACC precision.
// input (N, C, IH, IW), grid (N, OH, OW, 2) holding (x, y) in [-1, 1], output (N, C, OH, OW), all contiguous.
// Modes as ATen's enums: interpolation 0 bilinear, 1 nearest; padding 0 zeros, 1 border, 2 reflection.

typedef struct {
  long N, C, IH, IW, OH, OW;
  int interpolation, padding, align_corners, taps;  // taps: gradient taps per output point (4 or 1)
} GridSample;

// Unnormalized source coordinate of `in` along a dim of `size` with its padding applied, and
// d(coordinate)/d(in) in *grad.
inline ACC source_coordinate(ACC in, long size, int padding, int align_corners, ACC* grad) {
  const ACC max_val = (ACC)(size - 1);
  const ACC scale = align_corners ? (ACC)(size - 1) / 2 : (ACC)size / 2;
  ACC x = align_corners ? (in + 1) * scale : (in + 1) * scale - (ACC)0.5;
  ACC g = scale;
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

inline bool inside(ACC y, ACC x, long H, long W) { return y > -1 && y < (ACC)H && x > -1 && x < (ACC)W; }

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
  ACC unused;
  const ACC x = source_coordinate(LOAD_T(grid, g), p.IW, p.padding, p.align_corners, &unused);
  const ACC y = source_coordinate(LOAD_T(grid, g + 1), p.IH, p.padding, p.align_corners, &unused);
  __global const T_T* plane = in + in_offset + (n * p.C + c) * p.IH * p.IW;
  ACC v = 0;
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
  ACC gx_mult, gy_mult;
  const ACC x = source_coordinate(LOAD_T(grid, grid_offset + 2 * e), p.IW, p.padding, p.align_corners, &gx_mult);
  const ACC y = source_coordinate(LOAD_T(grid, grid_offset + 2 * e + 1), p.IH, p.padding, p.align_corners, &gy_mult);
  const long plane_size = p.IH * p.IW, dummy = p.N * plane_size;
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
