//! Per-function profiling (`strata run --profile`), as Halide's profiler does it.
//!
//! The markers are the loop IR's own `produce f { .. }` blocks: every pass keeps them, so
//! they reach code generation around exactly the statements computing `f` (pure definition
//! and updates). With [`CodegenOptions::profile`](crate::CodegenOptions) on, both backends
//! emit `strata_profile_enter(state, id)` before such a block and
//! `strata_profile_exit(state, id)` after it, `id` being the function's index in
//! [`produced_functions`]; with it off (the default) nothing is emitted, so an ordinary
//! kernel pays nothing and its code is unchanged.
//!
//! **The counters belong to the call.** `state` is the [`ProfileState`] of the call in
//! progress: the kernel's frame carries its address (null for an unprofiled call of a
//! profiled kernel, whose markers then do nothing), and parallel loop bodies receive it with
//! the rest of the scope. Two profiled calls running at once (two threads, or a profiled
//! kernel inside a parallel application) therefore never count each other's blocks.
//!
//! Time is **per-thread self time**: a producer computed inside its consumer's loop
//! (`compute_at`) has its `produce` block nested in the consumer's, and its time is
//! subtracted from the consumer's. A parallel loop's iterations count, on the thread that
//! ran them, for the function whose block encloses the loop ([`parallel_region`]), while
//! the thread that waits for the loop counts nothing for the wait. So every function's
//! figure is thread time (summed over threads, which can exceed wall time), and the figures
//! add up to the thread time spent in `produce` blocks.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;
use strata_scheduler::Stmt;

/// The functions `body` computes in `produce` blocks, each once, in the order their first
/// block appears: a function's index here is its profiling id.
pub fn produced_functions(body: &Stmt) -> Vec<String> {
    let mut names = Vec::new();
    let mut stack = vec![body];
    while let Some(s) = stack.pop() {
        if let Stmt::Produce { func, .. } = s {
            if !names.contains(func) {
                names.push(func.clone());
            }
        }
        // Reversed so the first child is visited first.
        stack.extend(s.children().into_iter().rev());
    }
    names
}

/// The profiling id of `func` in a kernel whose `produce` blocks name `functions`.
pub fn id_of(functions: &[String], func: &str) -> i32 {
    functions
        .iter()
        .position(|f| f == func)
        .map_or(-1, |i| i as i32)
}

/// What one function took in a profiled run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FunctionTime {
    /// The function.
    pub name: String,
    /// Its self time in nanoseconds, summed over the threads that ran it.
    pub self_nanos: u64,
    /// How many times its `produce` block ran.
    pub calls: u64,
}

/// The counters of one profiled call, one slot per function; generated code receives its
/// address through the kernel's frame.
pub struct ProfileState {
    nanos: Vec<AtomicU64>,
    calls: Vec<AtomicU64>,
}

impl ProfileState {
    /// Zeroed counters for the functions `functions` (in profiling-id order).
    pub fn new(functions: &[String]) -> ProfileState {
        ProfileState {
            nanos: functions.iter().map(|_| AtomicU64::new(0)).collect(),
            calls: functions.iter().map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// What the call counted, per function of `functions` (the list given to `new`).
    pub fn times(&self, functions: &[String]) -> Vec<FunctionTime> {
        (functions.iter().zip(self.nanos.iter().zip(&self.calls)))
            .map(|(name, (nanos, calls))| FunctionTime {
                name: name.clone(),
                self_nanos: nanos.load(Ordering::Relaxed),
                calls: calls.load(Ordering::Relaxed),
            })
            .collect()
    }

    /// Adds a finished block's self time to function `id` (and one call if `call`).
    fn add(&self, id: i32, self_nanos: u64, call: bool) {
        let i = id as usize;
        if let (Some(nanos), Some(calls)) = (self.nanos.get(i), self.calls.get(i)) {
            nanos.fetch_add(self_nanos, Ordering::Relaxed);
            if call {
                calls.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// An open block on this thread: a `produce` block, or a parallel loop's chunk counted for
/// the function whose block encloses the loop (not a call of it).
struct Frame {
    state: *const ProfileState,
    id: i32,
    start: Instant,
    /// Time this thread spent in blocks nested in this one, or waiting for a parallel loop
    /// started in it, in nanoseconds.
    excluded: u64,
    is_call: bool,
}

thread_local! {
    static OPEN: RefCell<Vec<Frame>> = const { RefCell::new(Vec::new()) };
}

/// Opens a block on this thread.
fn open(state: *const ProfileState, id: i32, is_call: bool) {
    // `try_with`: a thread being torn down has no stack left; it just does not count.
    let _ = OPEN.try_with(|open| {
        open.borrow_mut().push(Frame {
            state,
            id,
            start: Instant::now(),
            excluded: 0,
            is_call,
        })
    });
}

/// Closes this thread's innermost block if it is `(state, id)`: its time less what it
/// excluded goes to `id`, and a `produce` block's time, all of it, to the enclosing block's
/// exclusions. (A chunk's time needs no such exclusion: a chunk runs inside a parallel loop,
/// whose whole duration the thread that started it excludes.)
fn close(state: *const ProfileState, id: i32) {
    let _ = OPEN.try_with(|open| {
        let mut open = open.borrow_mut();
        match open.last() {
            Some(f) if f.state == state && f.id == id => {}
            _ => return,
        }
        let Some(frame) = open.pop() else { return };
        let elapsed = frame.start.elapsed().as_nanos() as u64;
        if let (true, Some(parent)) = (frame.is_call, open.last_mut()) {
            parent.excluded += elapsed;
        }
        // SAFETY: the state outlives the kernel call that opened the frame (`profiled`), and
        // the frame was opened by that call on this thread: the call is still running.
        let state = unsafe { &*frame.state };
        state.add(
            frame.id,
            elapsed.saturating_sub(frame.excluded),
            frame.is_call,
        );
    });
}

/// Runs a profiled kernel call: `run` gets the address of fresh counters for `functions`
/// (to put in the kernel's frame); returns its result and each function's self time and
/// calls. Calls may run concurrently: each has its own counters.
pub fn profiled<R>(
    functions: &[String],
    run: impl FnOnce(*const ProfileState) -> R,
) -> (R, Vec<FunctionTime>) {
    let state = ProfileState::new(functions);
    let result = run(&state);
    // Every thread of the call (parallel loops join before the kernel returns) is done.
    (result, state.times(functions))
}

/// The block enclosing a parallel loop that this thread is about to start, if it is
/// profiled: the runtime runs each chunk of the loop inside [`in_region`] with it, and
/// excludes the wait from the enclosing block with [`exclude_wait`].
#[derive(Clone, Copy)]
pub(crate) struct ParallelRegion {
    state: *const ProfileState,
    id: i32,
}

// SAFETY: the state is only read (atomics) and outlives the parallel loop, which ends
// before the kernel call that owns it returns.
unsafe impl Send for ParallelRegion {}
unsafe impl Sync for ParallelRegion {}

/// The region of a parallel loop that a call counting into `state` (null: not profiled)
/// starts on this thread: this thread's innermost open block, if it is that call's. (It may
/// be another call's: a pool thread running this call's loop inside a chunk it took from a
/// loop of a profiled call while waiting. Then the loop is outside this call's blocks.)
pub(crate) fn parallel_region(state: *const ProfileState) -> Option<ParallelRegion> {
    if state.is_null() {
        return None;
    }
    OPEN.try_with(|open| {
        let open = open.borrow();
        let frame = open.last().filter(|f| f.state == state)?;
        Some(ParallelRegion {
            state,
            id: frame.id,
        })
    })
    .ok()
    .flatten()
}

/// Runs one chunk of a parallel loop started in `region`, its time counted (on this thread)
/// for the region's function, less the blocks nested in it.
pub(crate) fn in_region(region: Option<ParallelRegion>, chunk: impl FnOnce()) {
    let Some(region) = region else { return chunk() };
    open(region.state, region.id, false);
    chunk();
    close(region.state, region.id);
}

/// Excludes `nanos`, the duration of a parallel loop this thread started on a pool (waiting,
/// or running some of its chunks as chunk blocks), from this thread's innermost open block.
pub(crate) fn exclude_wait(nanos: u64) {
    let _ = OPEN.try_with(|open| {
        if let Some(frame) = open.borrow_mut().last_mut() {
            frame.excluded += nanos;
        }
    });
}

/// Generated code calls this on entering the `produce` block of function `id`, with the
/// call's counters (null: an unprofiled call; nothing is counted).
pub extern "C" fn strata_profile_enter(state: *const ProfileState, id: i32) {
    if !state.is_null() {
        open(state, id, true);
    }
}

/// Generated code calls this on leaving the `produce` block of function `id`.
pub extern "C" fn strata_profile_exit(state: *const ProfileState, id: i32) {
    if !state.is_null() {
        close(state, id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::strata_parallel_for;
    use std::time::Duration;

    /// How long each chunk sleeps inside function 1's block.
    const NAP: Duration = Duration::from_millis(15);

    /// A parallel loop body: each chunk enters function 1, sleeps, leaves it.
    unsafe extern "C" fn napping_body(ctx: *const u8, _lo: i32, _hi: i32) {
        let state = ctx as *const ProfileState;
        strata_profile_enter(state, 1);
        std::thread::sleep(NAP);
        strata_profile_exit(state, 1);
    }

    /// Function 0's block starts a 2-thread parallel loop whose chunks spend their time in
    /// function 1: the caller's wait is not function 0's time (it was, before per-thread
    /// self time: function 0 counted the loop's whole wall time), and function 1 gets every
    /// chunk's nap on whichever thread ran it.
    #[test]
    fn waiting_for_a_parallel_loop_is_not_self_time() {
        let functions = vec!["f0".to_string(), "f1".to_string()];
        let (block_wall, times) = profiled(&functions, |state| {
            let start = Instant::now();
            strata_profile_enter(state, 0);
            // SAFETY: the body only reads the state, which outlives the loop.
            unsafe { strata_parallel_for(napping_body, state as *const u8, 0, 8, 2, state) };
            strata_profile_exit(state, 0);
            start.elapsed()
        });
        let (f0, f1) = (&times[0], &times[1]);
        assert_eq!((f0.calls, f1.calls), (1, 8), "{times:?}");
        // Eight chunks (two threads, four chunks each): at least eight naps of thread time.
        assert!(f1.self_nanos >= 8 * NAP.as_nanos() as u64, "{times:?}");
        // Function 0 did nothing but start the loop, which took at least four naps of wall
        // time (eight chunks, two threads): its self time is at most the block's wall time
        // less those naps, however long a busy machine makes the bookkeeping around them. (A
        // fixed bound, "under two naps", failed under load; counting the wait would still
        // exceed this one by the four naps.)
        let loop_at_least = 4 * NAP.as_nanos() as u64;
        assert!(
            f0.self_nanos + loop_at_least <= block_wall.as_nanos() as u64,
            "{times:?}, block wall {block_wall:?}"
        );
    }

    /// A parallel loop body that only sleeps.
    unsafe extern "C" fn napping_chunk(_ctx: *const u8, _lo: i32, _hi: i32) {
        std::thread::sleep(NAP);
    }

    /// An unprofiled call's parallel loop started inside a profiled call's block (a pool
    /// thread running another kernel's code) is not counted for that block's function: the
    /// loop's chunks belong to no profiled call.
    #[test]
    fn another_calls_parallel_loop_is_not_counted() {
        let functions = vec!["f0".to_string()];
        let (block_wall, times) = profiled(&functions, |state| {
            let start = Instant::now();
            strata_profile_enter(state, 0);
            // SAFETY: the body reads nothing. Three threads: a pool no other test here uses,
            // so nothing else queues on it.
            unsafe {
                strata_parallel_for(napping_chunk, std::ptr::null(), 0, 8, 3, std::ptr::null())
            };
            strata_profile_exit(state, 0);
            start.elapsed()
        });
        // The block's self time is at most its wall time, however long a busy machine makes
        // the loop take (an upper bound of six naps failed under load: the wait is the block's
        // own, and two cores shared with another test suite stretched it past 100 ms).
        // Counting the chunks on their threads would add eight naps of thread time on top.
        assert!(
            times[0].self_nanos <= block_wall.as_nanos() as u64,
            "{times:?}, block wall {block_wall:?}"
        );
    }

    /// Two profiled calls at once on two threads, and unprofiled markers (a null state) on a
    /// third, count only into their own counters.
    #[test]
    fn overlapping_calls_keep_their_own_counts() {
        let functions = vec!["f".to_string()];
        let barrier = std::sync::Barrier::new(3);
        let profiled_thread = || {
            barrier.wait();
            let ((), times) = profiled(&functions, |state| {
                for _ in 0..1000 {
                    strata_profile_enter(state, 0);
                    strata_profile_exit(state, 0);
                }
            });
            times[0].calls
        };
        let calls = std::thread::scope(|s| {
            let a = s.spawn(profiled_thread);
            let b = s.spawn(profiled_thread);
            barrier.wait();
            for _ in 0..1000 {
                strata_profile_enter(std::ptr::null(), 0);
                strata_profile_exit(std::ptr::null(), 0);
            }
            [a.join().unwrap(), b.join().unwrap()]
        });
        assert_eq!(calls, [1000, 1000]);
    }
}
