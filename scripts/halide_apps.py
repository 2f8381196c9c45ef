"""Halide 21's side of BENCHMARKS.md's app comparison (issue 20, item 4).

The three app kernels strata ports from Halide's own apps, written again with Halide 21's
Python bindings so that both compilers compute the same math:

    local_laplacian  examples/kernels/local_laplacian.strata (apps/local_laplacian), 8 levels,
                     intensity_levels = 8, alpha = 1, beta = 1; u16 RGB in, f32 RGB out, 128x128
    interpolate      examples/kernels/interpolate.strata (apps/interpolate), 10 levels;
                     f32 RGBA in (the smooth image /tmp/smooth.npy), f32 RGB out, 128x128
    bilateral_grid   examples/kernels/bilateral_grid.strata (apps/bilateral_grid), range_bins = 10
                     (Halide's r_sigma = 0.1), s_sigma = 8; f32 in, f32 out, 256x256

Each Halide pipeline follows the .strata file term by term (its constants, clamps, order of
the separable passes and the written-out lerps), not Halide's file where the two differ; the
differences from Halide's originals are listed at each builder. strata's `/` and `%` on
integers are Halide's (floor division, Euclidean modulo), written `//` and `%` here; strata's
`clamp_edge` is Halide's BoundaryConditions.repeat_edge.

Layouts: strata indexes (y, x, c), c innermost (interleaved; a numpy array of shape (H, W, C)).
Halide's apps are planar, f(x, y, c) with x innermost: the Halide buffers here wrap numpy arrays
of shape (C, H, W), which hl.Buffer maps to Halide dimensions (x, y, c). to_planar() and
to_interleaved() convert.

Schedules measured, all on one thread (the script sets HL_NUM_THREADS=1 before Halide starts,
and the autoschedulers get parallelism = 1):
    hand           Halide 21's hand CPU schedule of the app (the C++ generator at tag v21.0.0;
                   examples/schedules/<app>.sched translate the same schedules to strata)
    root           every Func compute_root(), nothing else
    Mullapudi2016, Li2018, Adams2019
                   the autoschedulers in the wheel, given the exact sizes as estimates

For each: compile_to_callable (compile time), one checked run (against the `root` output, and
against strata's output when --strata-output gives it), then a warm-up run and the median of
at least --min-runs runs lasting at least --min-time seconds. An autoscheduler or compile that
fails is reported with its error.

The project's build and tests never run this script. It needs Halide's PyPI wheel and numpy:

    python3 -m venv /work/halide-venv
    /work/halide-venv/bin/pip install "halide==21.0.0" numpy

Run (all three apps, every schedule, JSON lines to a file):

    /work/halide-venv/bin/python scripts/halide_apps.py --out halide_apps.jsonl

Comparing with strata's outputs: write the inputs, let strata compute on them, compare:

    /work/halide-venv/bin/python scripts/halide_apps.py --write-inputs /tmp/apps > /tmp/apps/run.sh
        (writes /tmp/apps/<app>_input.npy and prints the `strata run` commands, each app under
         its examples/schedules/<app>.sched, that write /tmp/apps/<app>_strata.npy; run them
         from the repository's root: sh /tmp/apps/run.sh)
    /work/halide-venv/bin/python scripts/halide_apps.py \
        --strata-output local_laplacian=/tmp/apps/local_laplacian_strata.npy \
        --strata-output interpolate=/tmp/apps/interpolate_strata.npy \
        --strata-output bilateral_grid=/tmp/apps/bilateral_grid_strata.npy
"""
import argparse
import importlib.metadata
import json
import os
import statistics
import sys
import time

# The runtime's thread pool reads this when it starts: set it before halide is imported.
os.environ["HL_NUM_THREADS"] = "1"

import halide as hl  # noqa: E402
import numpy as np  # noqa: E402

AUTOSCHEDULERS = ["Mullapudi2016", "Li2018", "Adams2019"]
SCHEDULES = ["root", "hand"] + AUTOSCHEDULERS  # root first: it is the reference
LIBDIR = os.path.join(os.path.dirname(hl.__file__), "lib64")
F = hl.f32  # Python floats must be cast: Halide warns when a double loses precision as f32

# Halide's apps name their Vars so; the hand schedules refer to them.
x, y, z, c, k = hl.Var("x"), hl.Var("y"), hl.Var("z"), hl.Var("c"), hl.Var("k")


class Built:
    """One app's pipeline, freshly defined (schedules are state on the Funcs, so every
    schedule gets its own build): the output Func, the arguments in the order the compiled
    callable takes them, the values of the scalar arguments, every Func by strata's name, and
    the RDom a hand schedule names (bilateral grid's)."""

    def __init__(self, out, inp, params, values, funcs, rdom=None):
        self.out, self.inp, self.params, self.values, self.funcs = out, inp, params, values, funcs
        self.rdom = rdom

    def __getitem__(self, name):
        return self.funcs[name]


class Funcs(dict):
    """Funcs by name, created on first use: the names are strata's, so the two compilers'
    schedules and dumps can be read side by side."""

    def __missing__(self, name):
        f = self[name] = hl.Func(name)
        return f


# ---------------------------------------------------------------------------------------------
# local_laplacian
# ---------------------------------------------------------------------------------------------

LL_LEVELS = 8  # pyramid levels (Halide's GeneratorParam pyramid_levels)


def build_local_laplacian(h, w):
    """examples/kernels/local_laplacian.strata. strata's g{j}, l{j}, ig{j}, ol{j}, og{j} are
    Halide's gPyramid[j], lPyramid[j], inGPyramid[j], outLPyramid[j], outGPyramid[j].

    As Halide's Python app (python_bindings/apps/local_laplacian_generator.py) and unlike its
    C++ generator: the downsampling filters along x first, then y (the C++ one, y then x), and
    the colour is put back as og0 * (in + 0.01) / (gray + 0.01) (the C++ one: in * (og0 + 0.01)
    / (gray + 0.01), in u16 units). Unlike both, the output is f32, clamped to [0, 1], not
    scaled to u16; and the upsampling's lerps are written out as 0.25 * a + 0.75 * b, as
    strata's file has them. Halide's process.cpp passes alpha / (levels - 1) as `alpha`; here
    alpha = 1 goes in as is, as in strata's runs."""
    f = Funcs()
    inp = hl.ImageParam(hl.UInt(16), 3, "input")
    levels = hl.Param(hl.Int(32), "intensity_levels")
    alpha, beta = hl.Param(hl.Float(32), "alpha"), hl.Param(hl.Float(32), "beta")
    src = hl.BoundaryConditions.repeat_edge(inp)
    n1 = levels - 1

    def floating(ch):
        return F(src[x, y, ch]) / F(65535.0)

    fx = F(x) / F(256.0)
    f["remap"][x] = alpha * fx * hl.exp(F(0.0) - fx * fx / F(2.0))
    gray = f["gray"]
    gray[x, y] = F(0.299) * floating(0) + F(0.587) * floating(1) + F(0.114) * floating(2)

    # The processed Gaussian pyramid: one image per intensity level k.
    level = F(k) * (F(1.0) / F(n1))
    idx = hl.clamp(hl.i32(gray[x, y] * F(n1) * F(256.0)), 0, n1 * 256)
    f["g0"][x, y, k] = beta * (gray[x, y] - level) + level + f["remap"][idx - 256 * k]
    for j in range(1, LL_LEVELS):
        downsample(f[f"g{j - 1}"], f[f"g{j}x"], f[f"g{j}"], [k])
    # Its Laplacian pyramid (the coarsest level is g7 itself).
    for j in range(LL_LEVELS - 1):
        upsample(f[f"g{j + 1}"], f[f"ug{j}x"], f[f"ug{j}"], [k])
        f[f"l{j}"][x, y, k] = f[f"g{j}"][x, y, k] - f[f"ug{j}"][x, y, k]
    # The Gaussian pyramid of the input's gray image.
    f["ig0"][x, y] = gray[x, y]
    for j in range(1, LL_LEVELS):
        downsample(f[f"ig{j - 1}"], f[f"ig{j}x"], f[f"ig{j}"], [])
    # The output's Laplacian pyramid: each level read between the two intensity levels
    # nearest the input's gray value there.
    for j in range(LL_LEVELS):
        lap = f[f"l{j}"] if j < LL_LEVELS - 1 else f[f"g{j}"]
        v = f[f"ig{j}"][x, y] * F(n1)
        li = hl.clamp(hl.i32(v), 0, levels - 2)
        lf = v - F(li)
        f[f"ol{j}"][x, y] = (F(1.0) - lf) * lap[x, y, li] + lf * lap[x, y, li + 1]
    # Collapsed back into the output's Gaussian pyramid.
    top = LL_LEVELS - 1
    f[f"og{top}"][x, y] = f[f"ol{top}"][x, y]
    for j in range(top - 1, -1, -1):
        upsample(f[f"og{j + 1}"], f[f"uo{j}x"], f[f"uo{j}"], [])
        f[f"og{j}"][x, y] = f[f"uo{j}"][x, y] + f[f"ol{j}"][x, y]
    out = f["out"]
    colour = f["og0"][x, y] * (F(src[x, y, c]) / F(65535.0) + F(0.01)) / (gray[x, y] + F(0.01))
    out[x, y, c] = hl.clamp(colour, F(0.0), F(1.0))

    inp.set_estimates([hl.Range(0, w), hl.Range(0, h), hl.Range(0, 3)])
    levels.set_estimate(8)
    alpha.set_estimate(1.0)
    beta.set_estimate(1.0)
    out.set_estimates([hl.Range(0, w), hl.Range(0, h), hl.Range(0, 3)])
    return Built(out, inp, [levels, alpha, beta], [8, 1.0, 1.0], f)


def downsample(src, fx_, fy_, rest):
    """The 1 3 3 1 filter, halving: along x into fx_, then along y into fy_."""
    def at(f, xx, yy):
        return f[tuple([xx, yy] + rest)]

    fx_[tuple([x, y] + rest)] = (at(src, 2 * x - 1, y) + F(3.0) * (at(src, 2 * x, y) + at(src, 2 * x + 1, y))
                                 + at(src, 2 * x + 2, y)) / F(8.0)
    fy_[tuple([x, y] + rest)] = (at(fx_, x, 2 * y - 1) + F(3.0) * (at(fx_, x, 2 * y) + at(fx_, x, 2 * y + 1))
                                 + at(fx_, x, 2 * y + 2)) / F(8.0)


def upsample(src, ux, uy, rest):
    """Bilinear doubling, along x into ux, then along y into uy: Halide's
    lerp(f((x + 1) / 2), f((x - 1) / 2), ((x % 2) * 2 + 1) / 4) as strata writes it."""
    def at(f, xx, yy):
        return f[tuple([xx, yy] + rest)]

    ux[tuple([x, y] + rest)] = F(0.25) * at(src, x // 2 - 1 + 2 * (x % 2), y) + F(0.75) * at(src, x // 2, y)
    uy[tuple([x, y] + rest)] = F(0.25) * at(ux, x, y // 2 - 1 + 2 * (y % 2)) + F(0.75) * at(ux, x, y // 2)


def hand_local_laplacian(b, target):
    """Halide 21's CPU schedule (apps/local_laplacian/local_laplacian_generator.cpp at v21.0.0;
    the clone of gPyramid[0] into gPyramid[1] came after 21). Unscheduled Funcs are inlined."""
    yo = hl.Var("yo")
    b["remap"].compute_root()
    b.out.reorder(c, x, y).split(y, yo, y, 64).parallel(yo).vectorize(x, 8)
    b["gray"].compute_root().never_partition([y]).parallel(y, 32).vectorize(x, 8)
    for j in range(1, 5):
        b[f"ig{j}"].compute_root().parallel(y, 32).vectorize(x, 8)
        b[f"g{j}"].compute_root().reorder_storage(x, k, y).reorder(k, y).parallel(y, 8).vectorize(x, 8)
        (b[f"og{j}"].store_at(b.out, yo).compute_at(b.out, y).fold_storage(y, 4)
         .vectorize(x, 8, hl.TailStrategy.RoundUp))
        if j > 1:
            b[f"ig{j}"].never_partition_all()
            b[f"g{j}"].never_partition_all()
    b["og0"].compute_at(b.out, y).hoist_storage(b.out, yo).vectorize(x, 8, hl.TailStrategy.RoundUp)
    for j in range(5, LL_LEVELS):
        b[f"ig{j}"].compute_root()
        b[f"g{j}"].compute_root().parallel(k)
        b[f"og{j}"].compute_root()


def input_local_laplacian(h, w):
    """u16 RGB, (H, W, 3) interleaved: smooth colour ramps with a checkerboard and fine
    stripes on them (detail for the filter to act on) and a little noise; seeded.

    The LUT index i32(gray * 7 * 256) is a step function of the pixel: a pixel whose exact
    gray * 1792 lies within 1e-3 of an integer truncates either way depending on the last bit
    of rounding (the order of the float operations, a fused multiply-add), and its LUT entry
    differs by ~1/256, enough to move the output there by ~1e-2. Such pixels get their blue
    channel nudged by one unit so that two correct compilers agree (without it, pixel (10, 8)
    of this image sits 1.5e-5 below 389)."""
    rng = np.random.default_rng(20)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    u, v = xx / max(w - 1, 1), yy / max(h - 1, 1)
    base = np.stack([0.15 + 0.7 * u, 0.15 + 0.7 * v, 0.5 + 0.3 * np.sin(6.0 * u + 4.0 * v)], axis=-1)
    checker = ((xx // 16 + yy // 16) % 2 - 0.5) * 0.15
    stripes = 0.05 * np.sin(xx * 0.9) * np.cos(yy * 0.7)
    img = base + (checker + stripes)[..., None] + rng.normal(0.0, 0.01, (h, w, 3))
    img = np.round(np.clip(img, 0.0, 1.0) * 65535.0).astype(np.uint16)
    weights = np.array([0.299, 0.587, 0.114], np.float32).astype(np.float64)  # as f32 constants
    while True:
        t = (img.astype(np.float64) / 65535.0) @ weights * (7 * 256)
        near = np.abs(t - np.round(t)) < 1e-3
        if not near.any():
            return img
        blue = img[..., 2]
        blue[near] = np.where(blue[near] < 65535, blue[near] + 1, blue[near] - 1)


# ---------------------------------------------------------------------------------------------
# interpolate
# ---------------------------------------------------------------------------------------------

IP_LEVELS = 10


def build_interpolate(h, w):
    """examples/kernels/interpolate.strata. strata's d{l}, dx{l}, interp{l}, ux{l}, up{l}, out
    are Halide's downsampled[l], downx[l], interpolated[l], upsampledx[l], upsampled[l],
    normalize; Halide's interpolated[9] is an identity of downsampled[9], here d9 itself.

    Level 4 reads level 3 through a clamp to [0, width / 8] x [0, height / 8], in both
    (Halide's "otherwise we look 512 pixels off each edge"); Halide's is an inline lambda,
    here an unscheduled (so inlined) Func."""
    f = Funcs()
    inp = hl.ImageParam(hl.Float(32), 3, "input")
    inp.dim(2).set_bounds(0, 4)  # RGBA
    src = hl.BoundaryConditions.repeat_edge(inp)
    f["d0"][x, y, c] = hl.select(c < 3, src[x, y, c] * src[x, y, 3], src[x, y, 3])
    for l in range(1, IP_LEVELS):
        prev = f[f"d{l - 1}"]
        if l == 4:
            f["d3_clamped"][x, y, c] = prev[hl.clamp(x, 0, inp.width() // 8), hl.clamp(y, 0, inp.height() // 8), c]
            prev = f["d3_clamped"]
        dx = f[f"dx{l}"]
        dx[x, y, c] = (prev[2 * x - 1, y, c] + F(2.0) * prev[2 * x, y, c] + prev[2 * x + 1, y, c]) * F(0.25)
        f[f"d{l}"][x, y, c] = (dx[x, 2 * y - 1, c] + F(2.0) * dx[x, 2 * y, c] + dx[x, 2 * y + 1, c]) * F(0.25)
    coarser = f[f"d{IP_LEVELS - 1}"]
    for l in range(IP_LEVELS - 2, -1, -1):
        ux, up, d = f[f"ux{l}"], f[f"up{l}"], f[f"d{l}"]
        ux[x, y, c] = (coarser[x // 2, y, c] + coarser[(x + 1) // 2, y, c]) * F(0.5)
        up[x, y, c] = (ux[x, y // 2, c] + ux[x, (y + 1) // 2, c]) * F(0.5)
        coarser = f[f"interp{l}"]
        coarser[x, y, c] = d[x, y, c] + (F(1.0) - d[x, y, 3]) * up[x, y, c]
    out = f["out"]
    out[x, y, c] = f["interp0"][x, y, c] / f["interp0"][x, y, 3]

    inp.set_estimates([hl.Range(0, w), hl.Range(0, h), hl.Range(0, 4)])
    out.set_estimates([hl.Range(0, w), hl.Range(0, h), hl.Range(0, 3)])
    return Built(out, inp, [], [], f)


def hand_interpolate(b, target):
    """Halide 21's CPU schedule (apps/interpolate/interpolate_generator.cpp, v21.0.0), with
    vectors of the target's natural f32 width as there."""
    vec = target.natural_vector_size(hl.Float(32))
    xo, xi, yo, yi = hl.Var("xo"), hl.Var("xi"), hl.Var("yo"), hl.Var("yi")
    for l in range(1, IP_LEVELS - 1):
        (b[f"d{l}"].compute_root().never_partition([x]).reorder(x, c, y)
         .split(y, yo, yi, 8).parallel(yo).vectorize(x, vec))
    # downsampled[0] recomputed per strip of downsampled[1], through a clone only downx[1] reads.
    (b["d0"].clone_in(b["dx1"]).store_at(b["d1"], yo).compute_at(b["d1"], yi)
     .reorder(c, x, y).unroll(c).vectorize(x, vec).never_partition([y]))
    (b.out.bound(x, 0, b.inp.width()).bound(y, 0, b.inp.height()).bound(c, 0, 3)
     .never_partition([y]).split(x, xo, xi, vec).split(y, yo, yi, 32)
     .reorder(xi, c, xo, yi, yo).unroll(c).vectorize(xi).parallel(yo))
    for l in range(1, IP_LEVELS):
        name = f"interp{l}" if l < IP_LEVELS - 1 else f"d{l}"  # Halide's interpolated[9] = d9
        b[name].store_at(b.out, yo).compute_at(b.out, yi).never_partition_all().vectorize(x, vec)


def input_interpolate(h, w, path):
    """The smooth RGBA image strata's interpolate runs use, (H, W, 4) f32 in [0.325, 0.925]
    (it divides by the interpolated alpha, so alpha must stay away from 0). When the file is
    missing, a seeded smooth image of the same kind."""
    if path and os.path.exists(path):
        img = np.load(path)
        assert img.shape == (h, w, 4) and img.dtype == np.float32, (path, img.shape, img.dtype)
        return img
    print(f"# {path} not found: using a generated smooth RGBA image", file=sys.stderr)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    u, v = xx / max(w - 1, 1), yy / max(h - 1, 1)
    chans = [np.sin(3.0 * u + 1.0), np.cos(2.0 * v + 0.5 * u), np.sin(2.0 * (u + v)), np.cos(1.5 * u - v)]
    return (0.625 + 0.3 * np.stack(chans, axis=-1)).astype(np.float32)


# ---------------------------------------------------------------------------------------------
# bilateral_grid
# ---------------------------------------------------------------------------------------------

S_SIGMA = 8
RANGE_BINS = 10


def build_bilateral_grid(h, w):
    """examples/kernels/bilateral_grid.strata. strata's grid and out are Halide's histogram and
    bilateral_grid.

    Halide's run-time float r_sigma is here the integer range_bins = 1 / r_sigma (10 for
    r_sigma = 0.1: Halide's 1.0f / 0.1f rounds to exactly 10.0f), and the grid indices are
    clamped to [0, range_bins] as strata's are (no-ops for values in [0, 1]); the trilinear
    interpolation is written as the sum of eight corner terms, as strata's file has it, not as
    Halide's nested lerps; the sampling reads the input through the boundary condition (Halide's
    reads the input directly; the same values, as only pixels inside the image are read)."""
    f = Funcs()
    inp = hl.ImageParam(hl.Float(32), 2, "input")
    bins = hl.Param(hl.Int(32), "range_bins")
    src = hl.BoundaryConditions.repeat_edge(inp)
    grid = f["grid"]
    r = hl.RDom([hl.Range(0, S_SIGMA), hl.Range(0, S_SIGMA)], "r")  # r.x is strata's rx, r.y its ry
    val = hl.clamp(src[x * S_SIGMA + r.x - S_SIGMA // 2, y * S_SIGMA + r.y - S_SIGMA // 2], F(0.0), F(1.0))
    grid[x, y, z, c] = F(0.0)
    zbin = hl.clamp(hl.i32(val * F(bins) + F(0.5)), 0, bins)
    grid[x, y, zbin, c] += hl.select(c == 0, val, F(1.0))

    def blur5(g, at):
        return at(g, -2) + at(g, -1) * F(4.0) + at(g, 0) * F(6.0) + at(g, 1) * F(4.0) + at(g, 2)

    f["blurz"][x, y, z, c] = blur5(grid, lambda g, d: g[x, y, z + d, c])
    f["blurx"][x, y, z, c] = blur5(f["blurz"], lambda g, d: g[x + d, y, z, c])
    f["blury"][x, y, z, c] = blur5(f["blurx"], lambda g, d: g[x, y + d, z, c])

    # Trilinear sampling of the blurred grid at each pixel.
    v = hl.clamp(src[x, y], F(0.0), F(1.0))
    zv = v * F(bins)
    zi = hl.clamp(hl.i32(zv), 0, bins)
    zf = zv - F(zi)
    xf = F(x % S_SIGMA) / F(8.0)
    yf = F(y % S_SIGMA) / F(8.0)
    xi, yi = x // S_SIGMA, y // S_SIGMA
    blury = f["blury"]
    terms = []
    for dz, wz in ((0, F(1.0) - zf), (1, zf)):
        for dy, dx, wx, wy in ((0, 0, F(1.0) - xf, F(1.0) - yf), (0, 1, xf, F(1.0) - yf),
                               (1, 0, F(1.0) - xf, yf), (1, 1, xf, yf)):
            terms.append(blury[xi + dx, yi + dy, zi + dz, c] * wx * wy * wz)
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    f["interpolated"][x, y, c] = total
    out = f["out"]
    out[x, y] = f["interpolated"][x, y, 0] / f["interpolated"][x, y, 1]

    inp.set_estimates([hl.Range(0, w), hl.Range(0, h)])
    bins.set_estimate(RANGE_BINS)
    out.set_estimates([hl.Range(0, w), hl.Range(0, h)])
    return Built(out, inp, [bins], [RANGE_BINS], f, rdom=r)


def hand_bilateral_grid(b, target):
    """Halide 21's CPU schedule (apps/bilateral_grid/bilateral_grid_generator.cpp, v21.0.0)."""
    r = b.rdom
    b["blurz"].compute_at(b["blurx"], y).reorder(c, z, x, y).vectorize(x, 8).unroll(c)
    b["grid"].compute_at(b["blurz"], y)
    b["grid"].update().reorder(c, r.x, r.y, x, y).unroll(c)
    b["blurx"].compute_root().reorder(c, x, z, y).parallel(y).vectorize(x, 8).unroll(c)
    (b["blury"].compute_at(b.out, y).store_in(hl.MemoryType.Stack)
     .reorder(c, x, y, z).reorder_storage(c, z, x, y).vectorize(x, 8).unroll(c))
    b.out.compute_root().parallel(y, 8).vectorize(x, 8)


def input_bilateral_grid(h, w):
    """f32 gray, (H, W) in [0, 1]: a ramp with a bright disc and a dark bar (edges for the
    filter to keep) under noise (for it to smooth); seeded."""
    rng = np.random.default_rng(21)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    img = 0.2 + 0.4 * xx / max(w - 1, 1)
    img += 0.3 * (((xx - 0.6 * w) ** 2 + (yy - 0.4 * h) ** 2) < (0.2 * min(h, w)) ** 2)
    img -= 0.15 * ((np.abs(yy - 0.75 * h) < 0.06 * h) & (xx > 0.2 * w))
    img += rng.normal(0.0, 0.05, (h, w))
    return np.clip(img, 0.0, 1.0).astype(np.float32)


# ---------------------------------------------------------------------------------------------
# The table of apps, and the strata command lines that compute the same
# ---------------------------------------------------------------------------------------------

APPS = {
    "local_laplacian": dict(h=128, w=128, channels=3, build=build_local_laplacian,
                            hand=hand_local_laplacian,
                            params="--param intensity_levels=8 --param alpha=1 --param beta=1"),
    "interpolate": dict(h=128, w=128, channels=3, build=build_interpolate, hand=hand_interpolate, params=""),
    "bilateral_grid": dict(h=256, w=256, channels=None, build=build_bilateral_grid,
                           hand=hand_bilateral_grid, params=f"--param range_bins={RANGE_BINS}"),
}


def app_input(name, args):
    """The app's input in strata's layout (interleaved, (H, W[, C]))."""
    a = APPS[name]
    if name == "local_laplacian":
        return input_local_laplacian(a["h"], a["w"])
    if name == "interpolate":
        return input_interpolate(a["h"], a["w"], args.interpolate_input)
    return input_bilateral_grid(a["h"], a["w"])


def to_planar(arr):
    """(H, W, C) interleaved -> (C, H, W) contiguous, which hl.Buffer sees as (x, y, c)."""
    return np.ascontiguousarray(arr.transpose(2, 0, 1)) if arr.ndim == 3 else arr


def to_interleaved(arr):
    """(C, H, W) planar -> (H, W, C), strata's layout."""
    return np.ascontiguousarray(arr.transpose(1, 2, 0)) if arr.ndim == 3 else arr


def write_inputs(directory, args):
    """Save each app's input as strata reads it (--input input=FILE.npy), print the strata
    command lines that write strata's outputs next to them."""
    os.makedirs(directory, exist_ok=True)
    for name, a in APPS.items():
        path = os.path.join(directory, f"{name}_input.npy")
        np.save(path, app_input(name, args))
        outp = os.path.join(directory, f"{name}_strata.npy")
        words = [args.strata_bin, "run", f"examples/kernels/{name}.strata", f"--input input={path}", a["params"],
                 f"--schedule @examples/schedules/{name}.sched", "--threads 1 --min-time 0.1", f"--output {outp}"]
        print(" ".join(w for w in words if w))


# ---------------------------------------------------------------------------------------------
# Scheduling, compiling, checking, timing
# ---------------------------------------------------------------------------------------------

_plugins = {}


def load_autoscheduler(name):
    """The wheel ships each autoscheduler as a plugin next to libHalide."""
    if name not in _plugins:
        hl.load_plugin(os.path.join(LIBDIR, f"libautoschedule_{name.lower()}.so"))
        _plugins[name] = True


def schedule(b, pipeline, name, target, app, dump_dir):
    """Apply schedule `name` to a fresh build; returns the seconds an autoscheduler took."""
    if name == "root":
        for f in b.funcs.values():
            f.compute_root()
        return None
    if name == "hand":
        APPS[app]["hand"](b, target)
        return None
    load_autoscheduler(name)
    t0 = time.perf_counter()
    res = pipeline.apply_autoscheduler(target, hl.AutoschedulerParams(name, {"parallelism": "1"}))
    seconds = time.perf_counter() - t0
    if dump_dir:
        os.makedirs(dump_dir, exist_ok=True)
        with open(os.path.join(dump_dir, f"{app}_{name}.txt"), "w") as fh:
            fh.write(res.schedule_source)
    return seconds


def time_runs(run, min_runs, min_time):
    """A warm-up run, then runs until there are min_runs of them and min_time has passed."""
    run()
    times, start = [], time.perf_counter()
    while len(times) < min_runs or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times), len(times)


def measure(app, sched, inp_planar, reference, strata_out, args, target, timed=True):
    """Build, schedule, compile, check and time (unless not `timed`) one (app, schedule); a
    record for the table and the output (planar), or None when it failed."""
    a = APPS[app]
    rec = {"app": app, "schedule": sched, "shape": [a["h"], a["w"]], "threads": 1}
    b = a["build"](a["h"], a["w"])
    pipeline = hl.Pipeline(b.out)
    shape = (a["channels"], a["h"], a["w"]) if a["channels"] else (a["h"], a["w"])
    out = np.zeros(shape, np.float32)  # planar: Halide's (x, y[, c])
    call_args = [hl.Buffer(inp_planar)] + b.values + [hl.Buffer(out)]
    try:
        rec["autoschedule_s"] = schedule(b, pipeline, sched, target, app, args.dump_schedules)
        t0 = time.perf_counter()
        fn = pipeline.compile_to_callable([hl.Argument(p) for p in [b.inp] + b.params], target)
        rec["compile_s"] = time.perf_counter() - t0
        fn(*call_args)
    except Exception as ex:  # an autoscheduler, the compiler or the run failing: report, carry on
        rec["error"] = f"{type(ex).__name__}: {ex}".strip()
        return rec, None
    result = out.copy()
    if reference is not None:
        err = float(np.max(np.abs(result - reference)) / max(float(np.max(np.abs(reference))), 1e-30))
        rec["rel_err_vs_root"], rec["ok"] = err, bool(err <= 1e-4)
    if strata_out is not None:
        rec["max_abs_vs_strata"] = float(np.max(np.abs(to_interleaved(result) - strata_out)))
    if timed:
        med, lo, n = time_runs(lambda: fn(*call_args), args.min_runs, args.min_time)
        rec.update(median_ms=med * 1e3, min_ms=lo * 1e3, runs=n)
    return rec, result


def fmt(v, width, prec=2):
    return f"{'-':>{width}}" if v is None else f"{v:>{width}.{prec}f}"


def print_row(rec):
    if "error" in rec:
        print(f"{rec['app']:<16} {rec['schedule']:<14} FAILED: {rec['error'][:300]}", flush=True)
        return
    if "ok" not in rec:
        check = "reference" if rec["schedule"] == "root" else "unchecked"
    else:
        check = "ok" if rec["ok"] else f"MISMATCH (relative error {rec['rel_err_vs_root']:.2e})"
    strata = f"  vs strata: max abs {rec['max_abs_vs_strata']:.3g}" if "max_abs_vs_strata" in rec else ""
    print(f"{rec['app']:<16} {rec['schedule']:<14} {fmt(rec['median_ms'], 10, 3)} {fmt(rec['min_ms'], 10, 3)} "
          f"{fmt(rec.get('compile_s'), 10)} {fmt(rec.get('autoschedule_s'), 12)}  {check}{strata}", flush=True)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--apps", nargs="+", default=list(APPS), choices=list(APPS))
    ap.add_argument("--schedules", nargs="+", default=SCHEDULES, choices=SCHEDULES)
    ap.add_argument("--min-runs", type=int, default=20)
    ap.add_argument("--min-time", type=float, default=0.5, help="seconds of timed runs, at least")
    ap.add_argument("--out", help="append one JSON line per (app, schedule) to this file")
    ap.add_argument("--strata-output", action="append", default=[], metavar="APP=FILE.npy",
                    help="strata's output for APP (interleaved, as `strata run --output` writes it)")
    ap.add_argument("--write-inputs", metavar="DIR",
                    help="write each app's input to DIR/<app>_input.npy, print the strata commands, exit")
    ap.add_argument("--strata-bin", default="/work/prof-target/release/strata",
                    help="the strata binary --write-inputs' commands name")
    ap.add_argument("--interpolate-input", default="/tmp/smooth.npy")
    ap.add_argument("--dump-schedules", metavar="DIR", help="write each autoscheduler's schedule here")
    ap.add_argument("--target", help="Halide target string (default: the host)")
    return ap.parse_args()


def main():
    args = parse_args()
    if args.write_inputs:
        write_inputs(args.write_inputs, args)
        return
    strata_outputs = dict(s.split("=", 1) for s in args.strata_output)
    target = hl.Target(args.target) if args.target else hl.get_host_target()
    meta = {"halide": importlib.metadata.version("halide"), "target": str(target),
            "HL_NUM_THREADS": os.environ["HL_NUM_THREADS"], "loadavg": os.getloadavg()}
    print("# " + json.dumps(meta))
    print(f"{'app':<16} {'schedule':<14} {'median ms':>10} {'min ms':>10} {'compile s':>10} {'autosched s':>12}")
    sink = open(args.out, "a") if args.out else None
    for app in args.apps:
        inp_planar = to_planar(app_input(app, args))
        strata_out = np.load(strata_outputs[app]) if app in strata_outputs else None
        reference = None
        # root always runs first (untimed when not asked for): its output is the reference.
        order = ["root"] + [s for s in args.schedules if s != "root"]
        for sched in order:
            timed = sched in args.schedules
            rec, result = measure(app, sched, inp_planar, reference, strata_out, args, target, timed)
            if sched == "root" and reference is None:
                reference = result
            if not timed:
                continue
            print_row(rec)
            if sink:
                sink.write(json.dumps(dict(rec, **meta)) + "\n")
                sink.flush()
    if sink:
        sink.close()


if __name__ == "__main__":
    main()
