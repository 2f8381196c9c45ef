"""Halide 21's side of BENCHMARKS.md's boundary-condition comparison (issue 20, item 6).

The u16 3x3 blur of examples/kernels/blur3x3_u16.strata, with and without `repeat_edge` on the
input, under the schedule of examples/schedules/blur3x3_u16_llvm.sched (output tiles of 8 rows
by 64 columns, 32 lanes, rows unrolled by 2, strips in parallel; blur_x per tile), on one
thread. Needs `pip install halide==21.0.0 numpy` (../shared/anchors/halide-numpy/run.sh makes
such a venv); the project's build and tests never run it.

    HL_NUM_THREADS=1 python3 scripts/halide_blur_edge.py [SIZE]
"""
import statistics
import sys
import time

import halide as hl
import numpy as np


def blur(edge):
    inp = hl.ImageParam(hl.UInt(16), 2, "input")
    src = hl.BoundaryConditions.repeat_edge(inp) if edge else inp
    x, y, xi, yi = hl.Var("x"), hl.Var("y"), hl.Var("xi"), hl.Var("yi")
    bx, out = hl.Func("blur_x"), hl.Func("blur_y")
    bx[x, y] = (src[x, y] + src[x + 1, y] + src[x + 2, y]) // 3
    out[x, y] = (bx[x, y] + bx[x, y + 1] + bx[x, y + 2]) // 3
    out.tile(x, y, xi, yi, 64, 8).vectorize(xi, 32).unroll(yi, 2).parallel(y)
    bx.compute_at(out, x).vectorize(x, 32).unroll(y, 2)
    return out.compile_to_callable([inp], hl.get_jit_target_from_environment())


def median_ms(fn, runs=30):
    fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
    rng = np.random.default_rng(1)
    plain, edge = blur(False), blur(True)
    padded = hl.Buffer(rng.integers(0, 21846, size=(n + 2, n + 2), dtype=np.uint16))
    image = hl.Buffer(rng.integers(0, 21846, size=(n, n), dtype=np.uint16))
    out = hl.Buffer(np.zeros((n, n), np.uint16))
    # Alternate the two so a busy moment of the machine falls on both alike.
    for _ in range(3):
        a = median_ms(lambda: plain(padded, out))
        b = median_ms(lambda: edge(image, out))
        print(f"halide {n}x{n}: no boundary {a:.2f} ms, repeat_edge {b:.2f} ms ({b / a:.2f}x)")


if __name__ == "__main__":
    main()
