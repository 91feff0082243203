// Integer matrix products for int8/uint8/int16/int32/int64 (T_T, from dtype_program):
// c = alpha * a @ b + beta * s, where s is the addend (c itself, or a bias read through its strides, 0 where
// broadcast). CPU computes in the dtype and wraps; products and sums in ulong wrap modulo 2^64, and the
// final conversion keeps the low bits, so the result equals CPU's bit for bit (unsigned arithmetic: no
// signed-overflow undefined behaviour). A 16 x 16 tile of c per work-group, staged through local memory
// 16 columns of k at a time; the batch is grid dimension 2. Sizes and strides are arguments: one program
// per dtype serves every shape and layout.
#define TILE 16

typedef struct {
  long m, n, k;
  long am, ak, ab;  // strides of a (m, k) per batch entry
  long bk, bn, bb;  // of b (k, n)
  long cm, cn, cb;  // of c (m, n)
  long sm, sn, sb;  // of the addend s (m, n)
} IntGemm;

__kernel __attribute__((reqd_work_group_size(TILE, TILE, 1))) void int_gemm(
    __global const T_T* a, ulong a_off, __global const T_T* b, ulong b_off, __global T_T* c, ulong c_off,
    __global const T_T* s, ulong s_off, IntGemm g, long alpha, long beta) {
  __local long ta[TILE][TILE];
  __local long tb[TILE][TILE + 1];
  const long col = get_global_id(0), row = get_global_id(1), batch = get_global_id(2);
  const int lx = get_local_id(0), ly = get_local_id(1);
  a += a_off + batch * g.ab;
  b += b_off + batch * g.bb;
  ulong acc = 0;
  for (long k0 = 0; k0 < g.k; k0 += TILE) {
    // Work-item (ly, lx) loads a[row, k0 + lx] and b[k0 + ly, col]: neighbours read neighbouring columns.
    const long ka = k0 + lx, kb = k0 + ly;
    ta[ly][lx] = row < g.m && ka < g.k ? (long)a[row * g.am + ka * g.ak] : 0;
    tb[ly][lx] = kb < g.k && col < g.n ? (long)b[kb * g.bk + col * g.bn] : 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int kk = 0; kk < TILE; ++kk) acc += (ulong)ta[ly][kk] * (ulong)tb[kk][lx];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (row >= g.m || col >= g.n) return;
  ulong r = (ulong)alpha * acc;
  if (beta != 0) r += (ulong)beta * (ulong)(long)s[s_off + batch * g.sb + row * g.sm + col * g.sn];
  c[c_off + batch * g.cb + row * g.cm + col * g.cn] = (T_T)r;
}
