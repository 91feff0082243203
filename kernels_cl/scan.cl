// Inclusive scans (cumsum, cumprod) along one dim, one program per
// (input, accumulate, output) dtype signature. The host (aten/scan.cpp)
// prepends the prelude and IN_T/LOAD_IN, OUT_T/STORE_OUT, ACC_T.
// One work-item scans one line; the other dims' sizes and strides are
// arguments (innermost first, so adjacent items read adjacent memory).
#define MAX_DIMS 12

enum { SCAN_SUM = 0, SCAN_PROD = 1 };

typedef struct {
  int ndim;
  long sizes[MAX_DIMS];
  long in_strides[MAX_DIMS];
  long out_strides[MAX_DIMS];
} ScanGeometry;

__kernel void scan_lines(__global const IN_T* in, ulong in_offset, __global OUT_T* out, ulong out_offset, int op,
                         long M, long N, long in_step, long out_step, ScanGeometry g) {
  long line = get_global_id(0);
  if (line >= M) return;
  long ib = 0, ob = 0;
  for (int k = 0; k < g.ndim; ++k) {
    const long i = line % g.sizes[k];
    line /= g.sizes[k];
    ib += i * g.in_strides[k];
    ob += i * g.out_strides[k];
  }
  __global const IN_T* src = in + in_offset + ib;
  __global OUT_T* dst = out + out_offset + ob;
  ACC_T acc = op == SCAN_SUM ? (ACC_T)0 : (ACC_T)1;
  for (long n = 0; n < N; ++n) {
    const ACC_T x = (ACC_T)LOAD_IN(src, n * in_step);
    acc = op == SCAN_SUM ? acc + x : acc * x;
    STORE_OUT(dst, n * out_step, acc);
  }
}
