//! The Rust runtime that JIT-compiled kernels call back into.
//!
//! Generated code reaches these functions through symbols registered with the JIT
//! ([`symbols`] lists every name and address, for `JITBuilder::symbol`). Every function
//! here is `extern "C"` (the Cranelift `SystemV` call convention on x86-64 Linux) and
//! never lets a panic unwind into its caller: cranelift-jit registers no unwind info
//! for JIT frames, so an unwind through them would be undefined behaviour. Anything
//! that could panic runs under `catch_unwind` and aborts the process with a message.
//!
//! - [`strata_parallel_for`]: Halide's `do_par_for`, over a cached rayon pool per thread
//!   count.
//! - [`strata_malloc`] / [`strata_free`]: 64-byte-aligned heap buffers.
//! - `strata_profile_enter` / `strata_profile_exit`: per-function profiling, only in code
//!   compiled with `CodegenOptions::profile` (they live in [`crate::profile`]).
//! - `strata_{exp,log,pow,sin,cos,tanh}{f,}`: scalar math, exactly the std functions the
//!   reference evaluator (`strata_dsl::eval`) uses, so JIT results match it bit for bit.

use std::alloc::Layout;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;
use std::time::Instant;

use rayon::prelude::*;
use rayon::{ThreadPool, ThreadPoolBuilder};

use crate::profile::{self, ProfileState};

/// The body of a parallel loop: `body(ctx, lo, hi)` runs the iterations `lo .. hi`.
pub type ParallelBody = unsafe extern "C" fn(ctx: *const u8, lo: i32, hi: i32);

/// How many chunks each thread gets: more than one so that uneven chunks balance out
/// through work stealing, few enough that the per-chunk call overhead stays negligible.
pub const CHUNKS_PER_THREAD: i64 = 4;

/// The most threads one pool may have; larger requests are clamped, so a wild `threads`
/// argument cannot make the process spawn thousands of threads.
pub const MAX_THREADS: usize = 256;

/// Alignment of every buffer [`strata_malloc`] returns: a cache line, and enough for
/// any vector load the code generator emits.
pub const BUFFER_ALIGN: usize = 64;

/// Prints `msg` and aborts: the only way out that cannot unwind into JIT code.
fn fatal(msg: &str) -> ! {
    eprintln!("strata runtime: fatal: {msg}");
    std::process::abort()
}

/// Runs `f`, aborting the process if it panics, so no panic ever unwinds into JIT code.
fn no_unwind<R>(what: &str, f: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => fatal(&format!(
            "panic in {what}; aborting (JIT frames cannot unwind)"
        )),
    }
}

// ---------------------------------------------------------------------------------------
// parallel_for
// ---------------------------------------------------------------------------------------

/// The body function and its context pointer, shared with the pool's threads.
///
/// The raw pointer is neither `Send` nor `Sync`; the generated code guarantees that the
/// context outlives the call and that concurrent calls of `body` on disjoint ranges are
/// safe (that is what a parallel loop means), so sharing it across threads is sound.
#[derive(Clone, Copy)]
struct Task {
    body: ParallelBody,
    ctx: *const u8,
}

unsafe impl Send for Task {}
unsafe impl Sync for Task {}

impl Task {
    /// Runs the iterations `lo .. hi`.
    ///
    /// # Safety
    /// As for [`strata_parallel_for`].
    unsafe fn run(self, lo: i64, hi: i64) {
        // Both bounds lie in `min ..= min + extent`, which the caller checked fits in i32.
        unsafe { (self.body)(self.ctx, lo as i32, hi as i32) }
    }
}

/// The pool with `threads` threads (`1 ..= MAX_THREADS`), built on first use and kept
/// for the process's life, so a parallel loop costs a few atomic operations instead of
/// spawning threads. One lock-free slot per thread count: nested loops on many workers
/// look their pool up concurrently without contending on a lock. `None` if the OS
/// refused to start the threads (the caller then runs serially: slower, still correct).
fn pool(threads: usize) -> Option<&'static ThreadPool> {
    static POOLS: [OnceLock<Option<ThreadPool>>; MAX_THREADS + 1] =
        [const { OnceLock::new() }; MAX_THREADS + 1];
    POOLS[threads].get_or_init(|| build_pool(threads)).as_ref()
}

/// Starts a pool of `threads` named worker threads, or reports why it could not.
fn build_pool(threads: usize) -> Option<ThreadPool> {
    let built = ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |i| format!("strata-{threads}t-{i}"))
        .build();
    match built {
        Ok(p) => Some(p),
        Err(e) => {
            eprintln!(
                "strata runtime: cannot start a {threads}-thread pool ({e}); running serially"
            );
            None
        }
    }
}

/// The bounds of chunk `k` of `chunks` equal chunks covering `min .. min + extent`:
/// consecutive chunks share their boundary, so every index is covered exactly once, and
/// chunk sizes differ by at most one.
fn chunk_bounds(min: i64, extent: i64, chunks: i64, k: i64) -> (i64, i64) {
    (min + extent * k / chunks, min + extent * (k + 1) / chunks)
}

/// Runs `task` over `min .. min + extent` in about [`CHUNKS_PER_THREAD`] chunks per
/// thread on the pool for `threads` threads.
///
/// `install` runs the loop inline when the caller is already a worker of the same pool
/// and otherwise blocks the caller while the pool works (a worker of another pool keeps
/// executing its own pool's jobs meanwhile); with rayon's work stealing a nested loop
/// therefore never deadlocks, whatever pools the outer and inner loops use.
///
/// Under profiling, each chunk counts on the thread that runs it for the function whose
/// `produce` block encloses the loop, and the loop's duration is excluded from that block
/// on the calling thread (`crate::profile`: per-thread self time).
fn run_parallel(task: Task, min: i64, extent: i64, threads: usize, state: *const ProfileState) {
    let Some(pool) = pool(threads) else {
        // SAFETY: as for strata_parallel_for.
        return unsafe { task.run(min, min + extent) };
    };
    let chunks = extent.min(CHUNKS_PER_THREAD * threads as i64).max(1);
    let region = profile::parallel_region(state);
    // Only a profiled loop reads the clock: an ordinary one pays nothing for profiling.
    let started = region.map(|_| Instant::now());
    pool.install(|| {
        (0..chunks as u32)
            .into_par_iter()
            .with_max_len(1) // one chunk per rayon job: balancing at chunk granularity
            .for_each(|k| {
                let (lo, hi) = chunk_bounds(min, extent, chunks, i64::from(k));
                // SAFETY: as for strata_parallel_for; chunks are disjoint.
                profile::in_region(region, || unsafe { task.run(lo, hi) })
            })
    });
    if let Some(started) = started {
        profile::exclude_wait(started.elapsed().as_nanos() as u64);
    }
}

/// Runs `body(ctx, lo, hi)` over chunks that together cover `min .. min + extent`, each
/// index exactly once, on up to `threads` threads (Halide's `do_par_for`).
///
/// - `extent <= 0`: runs nothing.
/// - `threads <= 1`: one call `body(ctx, min, min + extent)` on the calling thread.
/// - otherwise: about [`CHUNKS_PER_THREAD`] chunks per thread (at least one index each)
///   on a rayon pool with `min(threads, MAX_THREADS)` threads, built on first use and
///   cached per thread count. Returns when every chunk has finished. Chunks may run in
///   any order, on any thread, including the calling one.
///
/// Nested calls (from inside a `body`) work and do not deadlock. Aborts the process with
/// a message if `min + extent` overflows i32 or anything in the runtime panics.
///
/// `profile` is the kernel call's profiling counters (null when the call is not profiled):
/// the chunks then count for the function whose `produce` block of this call encloses the
/// loop (`crate::profile`).
///
/// # Safety
/// `body` must be safe to call with `ctx` on disjoint ranges concurrently from several
/// threads, and `ctx` (and `profile`, if not null) must stay valid until this function
/// returns.
pub unsafe extern "C" fn strata_parallel_for(
    body: ParallelBody,
    ctx: *const u8,
    min: i32,
    extent: i32,
    threads: i32,
    profile: *const ProfileState,
) {
    if extent <= 0 {
        return;
    }
    let (min, extent) = (i64::from(min), i64::from(extent));
    if min + extent > i64::from(i32::MAX) {
        fatal(&format!(
            "parallel_for range {min} + {extent} overflows i32"
        ));
    }
    let task = Task { body, ctx };
    if threads <= 1 {
        // SAFETY: guaranteed by the caller.
        return unsafe { task.run(min, min + extent) };
    }
    let threads = (threads as usize).min(MAX_THREADS);
    no_unwind("strata_parallel_for", || {
        run_parallel(task, min, extent, threads, profile)
    });
}

// ---------------------------------------------------------------------------------------
// Buffers
// ---------------------------------------------------------------------------------------

/// The layout of a `bytes`-byte buffer (`bytes > 0`), or `None` if no such layout exists
/// (more than `isize::MAX` bytes once rounded up to the alignment).
fn buffer_layout(bytes: i64) -> Option<Layout> {
    let size = usize::try_from(bytes).ok()?;
    Layout::from_size_align(size, BUFFER_ALIGN).ok()
}

/// The pointer returned for an empty buffer: non-null and aligned, never dereferenced.
fn empty_buffer() -> *mut u8 {
    std::ptr::without_provenance_mut(BUFFER_ALIGN)
}

/// Allocates an uninitialised `bytes`-byte buffer aligned to [`BUFFER_ALIGN`] (64) bytes.
///
/// `bytes <= 0` returns a non-null, aligned, dangling pointer that must not be
/// dereferenced and that [`strata_free`] accepts. Never returns null: if the allocation
/// fails (out of memory, or a size no layout can hold) it prints a message naming the
/// size and aborts the process, because generated code has no error path here and a
/// panic must not unwind into it. Release with `strata_free(ptr, bytes)`, same `bytes`.
pub extern "C" fn strata_malloc(bytes: i64) -> *mut u8 {
    if bytes <= 0 {
        return empty_buffer();
    }
    let Some(layout) = buffer_layout(bytes) else {
        fatal(&format!(
            "strata_malloc: cannot allocate {bytes} bytes (too large)"
        ));
    };
    // SAFETY: the layout's size is non-zero.
    let ptr = unsafe { std::alloc::alloc(layout) };
    if ptr.is_null() {
        fatal(&format!(
            "strata_malloc: out of memory allocating {bytes} bytes"
        ));
    }
    ptr
}

/// The most elements one buffer may hold (`strata_dsl::signature::MAX_ELEMENTS`).
const MAX_BUFFER_ELEMENTS: i64 = i32::MAX as i64;

/// [`strata_malloc`] of `elements` elements of `elem_bytes` bytes each (free it with
/// `strata_free(ptr, elements * elem_bytes)`). Generated code computes `elements` without
/// wrapping; a count past the most one buffer may hold aborts with a message naming it
/// instead of allocating (the generated code has no error path).
pub extern "C" fn strata_malloc_elements(elements: i64, elem_bytes: i64) -> *mut u8 {
    if elements > MAX_BUFFER_ELEMENTS {
        fatal(&format!(
            "a buffer of {elements} or more elements is needed, more than strata supports ({MAX_BUFFER_ELEMENTS}): the schedule computes a function over a region too large for this shape"
        ));
    }
    strata_malloc(elements.saturating_mul(elem_bytes))
}

/// Frees a buffer from [`strata_malloc`]; `bytes` must be the size it was allocated with.
/// `bytes <= 0` (the empty buffer) and a null `ptr` do nothing.
///
/// # Safety
/// `ptr` must come from `strata_malloc(bytes)` with the same `bytes` and not have been
/// freed already.
pub unsafe extern "C" fn strata_free(ptr: *mut u8, bytes: i64) {
    if bytes <= 0 || ptr.is_null() {
        return;
    }
    let Some(layout) = buffer_layout(bytes) else {
        fatal(&format!("strata_free: impossible size {bytes}"));
    };
    // SAFETY: guaranteed by the caller; the layout is the one used to allocate.
    unsafe { std::alloc::dealloc(ptr, layout) }
}

// ---------------------------------------------------------------------------------------
// Scalar math: exactly the std functions of the reference evaluator.
// ---------------------------------------------------------------------------------------

/// `f32::exp`.
pub extern "C" fn strata_expf(x: f32) -> f32 {
    x.exp()
}

/// `f32::ln` (natural logarithm).
pub extern "C" fn strata_logf(x: f32) -> f32 {
    x.ln()
}

/// `f32::powf`.
pub extern "C" fn strata_powf(x: f32, y: f32) -> f32 {
    x.powf(y)
}

/// `f32::sin`.
pub extern "C" fn strata_sinf(x: f32) -> f32 {
    x.sin()
}

/// `f32::cos`.
pub extern "C" fn strata_cosf(x: f32) -> f32 {
    x.cos()
}

/// `f32::tanh`.
pub extern "C" fn strata_tanhf(x: f32) -> f32 {
    x.tanh()
}

/// `f64::exp`.
pub extern "C" fn strata_exp(x: f64) -> f64 {
    x.exp()
}

/// `f64::ln` (natural logarithm).
pub extern "C" fn strata_log(x: f64) -> f64 {
    x.ln()
}

/// `f64::powf`.
pub extern "C" fn strata_pow(x: f64, y: f64) -> f64 {
    x.powf(y)
}

/// `f64::sin`.
pub extern "C" fn strata_sin(x: f64) -> f64 {
    x.sin()
}

/// `f64::cos`.
pub extern "C" fn strata_cos(x: f64) -> f64 {
    x.cos()
}

/// `f64::tanh`.
pub extern "C" fn strata_tanh(x: f64) -> f64 {
    x.tanh()
}

/// Every runtime symbol by the name generated code imports it under, with its address:
/// register each with `JITBuilder::symbol(name, addr)`.
pub fn symbols() -> Vec<(&'static str, *const u8)> {
    vec![
        ("strata_parallel_for", strata_parallel_for as *const u8),
        ("strata_malloc", strata_malloc as *const u8),
        (
            "strata_malloc_elements",
            strata_malloc_elements as *const u8,
        ),
        ("strata_free", strata_free as *const u8),
        (
            "strata_profile_enter",
            crate::profile::strata_profile_enter as *const u8,
        ),
        (
            "strata_profile_exit",
            crate::profile::strata_profile_exit as *const u8,
        ),
        ("strata_expf", strata_expf as *const u8),
        ("strata_logf", strata_logf as *const u8),
        ("strata_powf", strata_powf as *const u8),
        ("strata_sinf", strata_sinf as *const u8),
        ("strata_cosf", strata_cosf as *const u8),
        ("strata_tanhf", strata_tanhf as *const u8),
        ("strata_exp", strata_exp as *const u8),
        ("strata_log", strata_log as *const u8),
        ("strata_pow", strata_pow as *const u8),
        ("strata_sin", strata_sin as *const u8),
        ("strata_cos", strata_cos as *const u8),
        ("strata_tanh", strata_tanh as *const u8),
    ]
}
