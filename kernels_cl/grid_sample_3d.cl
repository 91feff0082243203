// grid_sampler_3d forward and backward (F.grid_sample of 5-D inputs) with the formulas of CPU's scalar kernel
// (aten/src/ATen/native/GridSampler.cpp, grid_sampler_3d_cpu_impl, and the helpers of GridSampler.h), in ACC
// precision: input (N, C, ID, IH, IW), grid (N, OD, OH, OW, 3) holding (x, y, z) in [-1, 1], output
// (N, C, OD, OH, OW), all contiguous. Modes as ATen's enums: interpolation 0 bilinear (trilinear), 1 nearest;
// padding 0 zeros, 1 border, 2 reflection.

typedef struct {
  long N, C, ID, IH, IW, OD, OH, OW;
  int interpolation, padding, align_corners, taps;  // taps: gradient taps per output point (8 or 1)
} GridSample3d;

// CPU's clip_coordinates: std::min(size - 1, std::max(x, 0)), whose comparisons send NaN to size - 1.
inline ACC clip(ACC x, long size) {
  const ACC lo = x < 0 ? (ACC)0 : x;
  const ACC hi = (ACC)(size - 1);
  return lo < hi ? lo : hi;
}

// CPU's clip_coordinates_set_grad (NaN passes through, with gradient 1).
inline ACC clip_set_grad(ACC x, long size, ACC* grad) {
  const ACC hi = (ACC)(size - 1);
  if (x <= 0) {
    *grad = 0;
    return 0;
  }
  if (x >= hi) {
    *grad = 0;
    return hi;
  }
  *grad = 1;
  return x;
}

// CPU's reflect_coordinates(_set_grad) about [twice_low / 2, twice_high / 2]; d(result)/d(x) in *grad.
inline ACC reflect(ACC x, long twice_low, long twice_high, ACC* grad) {
  if (twice_low == twice_high) {
    *grad = 0;
    return 0;
  }
  const ACC lo = (ACC)twice_low / 2, span = (ACC)(twice_high - twice_low) / 2;
  x = x - lo;
  ACC mult = 1;
  if (x < 0) {
    mult = -1;
    x = -x;
  }
  const ACC extra = fmod(x, span);
  const int flips = (int)floor(x / span);
  *grad = flips % 2 == 0 ? mult : -mult;
  return flips % 2 == 0 ? extra + lo : span - extra + lo;
}

// CPU's grid_sampler_compute_source_index (forward) and its _set_grad form (backward: d/d(grid) in *grad).
inline ACC source_index(ACC coord, long size, GridSample3d p) {
  coord = p.align_corners ? ((coord + 1) / 2) * (ACC)(size - 1) : ((coord + 1) * (ACC)size - 1) / 2;
  ACC unused;
  if (p.padding == 1) return clip(coord, size);
  if (p.padding == 2) {
    coord = p.align_corners ? reflect(coord, 0, 2 * (size - 1), &unused) : reflect(coord, -1, 2 * size - 1, &unused);
    return clip(coord, size);
  }
  return coord;
}
inline ACC source_index_set_grad(ACC coord, long size, GridSample3d p, ACC* grad) {
  *grad = p.align_corners ? (ACC)(size - 1) / 2 : (ACC)size / 2;
  coord = p.align_corners ? ((coord + 1) / 2) * (ACC)(size - 1) : ((coord + 1) * (ACC)size - 1) / 2;
  ACC g_clip, g_refl;
  if (p.padding == 1) {
    coord = clip_set_grad(coord, size, &g_clip);
    *grad = *grad * g_clip;
  } else if (p.padding == 2) {
    coord = p.align_corners ? reflect(coord, 0, 2 * (size - 1), &g_refl) : reflect(coord, -1, 2 * size - 1, &g_refl);
    coord = clip_set_grad(coord, size, &g_clip);
    *grad = *grad * g_refl * g_clip;
  }
  return coord;
}

// Floored coordinates (or rounded ones) tested in ACC: within_bounds_3d of their integer values, NaN outside.
inline bool inside(ACC z, ACC y, ACC x, GridSample3d p) {
  return z > -1 && z < (ACC)p.ID && y > -1 && y < (ACC)p.IH && x > -1 && x < (ACC)p.IW;
}

// The eight trilinear taps of (x, y, z) in CPU's order tnw, tne, tsw, tse, bnw, bne, bsw, bse (t = 4 dz +
// 2 dy + dx): positions (or -1 outside the input) and weights, multiplied in CPU's order (x, y, z).
inline void trilinear_taps(ACC x, ACC y, ACC z, GridSample3d p, long* at, ACC* w) {
  const ACC x0 = floor(x), y0 = floor(y), z0 = floor(z);
  for (int t = 0; t < 8; ++t) {
    const int dx = t & 1, dy = (t >> 1) & 1, dz = t >> 2;
    const ACC wx = dx ? x - x0 : x0 + 1 - x, wy = dy ? y - y0 : y0 + 1 - y, wz = dz ? z - z0 : z0 + 1 - z;
    w[t] = wx * wy * wz;
    const ACC tx = x0 + dx, ty = y0 + dy, tz = z0 + dz;
    at[t] = inside(tz, ty, tx, p) ? ((long)tz * p.IH + (long)ty) * p.IW + (long)tx : -1;
  }
}

// One work-item per output element.
__kernel void grid_sampler_3d_forward(__global T_T* out, ulong out_offset, __global const T_T* in, ulong in_offset,
                                      __global const T_T* grid, ulong grid_offset, long total, GridSample3d p) {
  const long e = get_global_id(0);
  if (e >= total) return;
  const long points = p.OD * p.OH * p.OW, pt = e % points, c = (e / points) % p.C, n = e / (points * p.C);
  const long g = grid_offset + (n * points + pt) * 3;
  __global const T_T* volume = in + in_offset + (n * p.C + c) * p.ID * p.IH * p.IW;
  const ACC x = source_index(LOAD_T(grid, g), p.IW, p);
  const ACC y = source_index(LOAD_T(grid, g + 1), p.IH, p);
  const ACC z = source_index(LOAD_T(grid, g + 2), p.ID, p);
  ACC v = 0;
  if (p.interpolation == 1) {
    const ACC xr = rint(x), yr = rint(y), zr = rint(z);  // half to even, as CPU's nearbyint
    if (inside(zr, yr, xr, p)) v = LOAD_T(volume, ((long)zr * p.IH + (long)yr) * p.IW + (long)xr);
  } else {
    long at[8];
    ACC w[8];
    trilinear_taps(x, y, z, p, at, w);
    for (int t = 0; t < 8; ++t)
      if (at[t] >= 0) v += LOAD_T(volume, at[t]) * w[t];
  }
  STORE_T(out, out_offset + e, v);
}

// One work-item per output point (n, od, oh, ow): grad_grid from the channels' values and gradients, and, for
// the input's gradient, the point's taps: row n * ID * IH * IW + position of an (N * ID * IH * IW + 1, C) table
// (the last row for a tap outside the input) and weight, which the host scales by grad_output and sums.
__kernel void grid_sampler_3d_backward(__global T_T* grad_grid, ulong gg_offset, __global long* tap_rows,
                                       ulong rows_offset, __global T_T* tap_weights, ulong weights_offset,
                                       __global const T_T* grad_out, ulong go_offset,
                                       __global const T_T* in, ulong in_offset, __global const T_T* grid,
                                       ulong grid_offset, long total, GridSample3d p, int want_taps) {
  const long e = get_global_id(0);
  if (e >= total) return;
  const long points = p.OD * p.OH * p.OW, pt = e % points, n = e / points;
  const long volume_size = p.ID * p.IH * p.IW, dummy = p.N * volume_size;
  ACC gx_mult, gy_mult, gz_mult;
  const ACC x = source_index_set_grad(LOAD_T(grid, grid_offset + 3 * e), p.IW, p, &gx_mult);
  const ACC y = source_index_set_grad(LOAD_T(grid, grid_offset + 3 * e + 1), p.IH, p, &gy_mult);
  const ACC z = source_index_set_grad(LOAD_T(grid, grid_offset + 3 * e + 2), p.ID, p, &gz_mult);
  ACC gx = 0, gy = 0, gz = 0;
  if (p.interpolation == 1) {
    gx_mult = gy_mult = gz_mult = 0;  // CPU's nearest grad_grid is 0 (not -0 from a reflected multiplier)
    const ACC xr = rint(x), yr = rint(y), zr = rint(z);
    if (want_taps) {
      tap_rows[rows_offset + e] =
          inside(zr, yr, xr, p) ? n * volume_size + ((long)zr * p.IH + (long)yr) * p.IW + (long)xr : dummy;
      STORE_T(tap_weights, weights_offset + e, (ACC)1);
    }
  } else {
    long at[8];
    ACC w[8];
    trilinear_taps(x, y, z, p, at, w);
    const ACC x0 = floor(x), y0 = floor(y), z0 = floor(z);
    for (long c = 0; c < p.C; ++c) {
      __global const T_T* volume = in + in_offset + (n * p.C + c) * volume_size;
      const ACC g = LOAD_T(grad_out, go_offset + (n * p.C + c) * points + pt);
      for (int t = 0; t < 8; ++t) {
        if (at[t] < 0) continue;
        const int dx = t & 1, dy = (t >> 1) & 1, dz = t >> 2;
        const ACC wx = dx ? x - x0 : x0 + 1 - x, wy = dy ? y - y0 : y0 + 1 - y, wz = dz ? z - z0 : z0 + 1 - z;
        const ACC v = LOAD_T(volume, at[t]);
        // d(weight)/dx is +-wy * wz (and so on), in CPU's order of factors.
        const ACC tx = v * wy * wz * g, ty = v * wx * wz * g, tz = v * wx * wy * g;
        gx = dx ? gx + tx : gx - tx;
        gy = dy ? gy + ty : gy - ty;
        gz = dz ? gz + tz : gz - tz;
      }
    }
    if (want_taps)
      for (int t = 0; t < 8; ++t) {
        tap_rows[rows_offset + 8 * e + t] = at[t] >= 0 ? n * volume_size + at[t] : dummy;
        STORE_T(tap_weights, weights_offset + 8 * e + t, w[t]);
      }
  }
  STORE_T(grad_grid, gg_offset + 3 * e, gx_mult * gx);
  STORE_T(grad_grid, gg_offset + 3 * e + 1, gy_mult * gy);
  STORE_T(grad_grid, gg_offset + 3 * e + 2, gz_mult * gz);
}
