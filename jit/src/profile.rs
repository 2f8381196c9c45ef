//! Per-function profiling (`strata run --profile`), as Halide's profiler does it.
//!
//! The markers are the loop IR's own `produce f { .. }` blocks: every pass keeps them, so
//! they reach code generation around exactly the statements computing `f` (pure definition
//! and updates). With [`CodegenOptions::profile`](crate::CodegenOptions) on, both backends
//! emit `strata_profile_enter(id)` before such a block and `strata_profile_exit(id)` after it,
//! `id` being the function's index in [`produced_functions`]; with it off (the default)
//! nothing is emitted, so an ordinary kernel pays nothing and its code is unchanged.
//!
//! Time is **self time**: a producer computed inside its consumer's loop (`compute_at`) has
//! its `produce` block nested in the consumer's, and its time is subtracted from the
//! consumer's, so the functions' times add up to the time spent in any `produce` block.
//! Each thread keeps its own stack of open blocks; the times of a parallel loop's iterations
//! are summed over the threads that ran them (thread time, which can exceed wall time), while
//! the thread that waits for the loop counts the wait in the enclosing function.
//!
//! The counters a profiled run fills are process-wide ([`profiled`] installs them and holds a
//! lock for the run, so profiled runs take turns); a profiled kernel run without [`profiled`]
//! finds no counters installed and its markers do nothing.

use std::cell::RefCell;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::Mutex;
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
    /// Its self time in nanoseconds, summed over threads.
    pub self_nanos: u64,
    /// How many times its `produce` block ran.
    pub calls: u64,
}

/// The counters of one profiled run, one slot per function.
struct Counters {
    nanos: Vec<AtomicU64>,
    calls: Vec<AtomicU64>,
}

/// The counters of the profiled run in progress, or null.
static ACTIVE: AtomicPtr<Counters> = AtomicPtr::new(std::ptr::null_mut());

/// Held for the whole of a profiled run.
static PROFILING: Mutex<()> = Mutex::new(());

/// An open `produce` block on this thread.
struct Frame {
    id: i32,
    start: Instant,
    /// Time spent in blocks nested in this one (on this thread), in nanoseconds.
    children: u64,
}

thread_local! {
    static OPEN: RefCell<Vec<Frame>> = const { RefCell::new(Vec::new()) };
}

/// Runs `run` with counters for `functions` installed; returns its result and each
/// function's self time and calls.
pub fn profiled<R>(functions: &[String], run: impl FnOnce() -> R) -> (R, Vec<FunctionTime>) {
    // A poisoned lock only means an earlier profiled run panicked; the counters are fresh.
    let _turn = PROFILING.lock().unwrap_or_else(|e| e.into_inner());
    let counters = Counters {
        nanos: functions.iter().map(|_| AtomicU64::new(0)).collect(),
        calls: functions.iter().map(|_| AtomicU64::new(0)).collect(),
    };
    OPEN.with(|open| open.borrow_mut().clear());
    ACTIVE.store(
        &counters as *const Counters as *mut Counters,
        Ordering::SeqCst,
    );
    let result = run();
    ACTIVE.store(std::ptr::null_mut(), Ordering::SeqCst);
    let times = (functions.iter().enumerate())
        .map(|(i, name)| FunctionTime {
            name: name.clone(),
            self_nanos: counters.nanos[i].load(Ordering::Relaxed),
            calls: counters.calls[i].load(Ordering::Relaxed),
        })
        .collect();
    (result, times)
}

/// Generated code calls this on entering the `produce` block of function `id`.
pub extern "C" fn strata_profile_enter(id: i32) {
    if ACTIVE.load(Ordering::Relaxed).is_null() {
        return;
    }
    // `try_with`: a thread being torn down has no stack left; it just does not count.
    let _ = OPEN.try_with(|open| {
        open.borrow_mut().push(Frame {
            id,
            start: Instant::now(),
            children: 0,
        })
    });
}

/// Generated code calls this on leaving the `produce` block of function `id`: the block's
/// time less its nested blocks' goes to `id`, all of it to the enclosing block's children.
pub extern "C" fn strata_profile_exit(id: i32) {
    let counters = ACTIVE.load(Ordering::Acquire);
    if counters.is_null() {
        return;
    }
    let _ = OPEN.try_with(|open| {
        let mut open = open.borrow_mut();
        // A block entered before the counters were installed has no frame: not counted.
        if open.last().map(|f| f.id) != Some(id) {
            return;
        }
        let Some(frame) = open.pop() else { return };
        let elapsed = frame.start.elapsed().as_nanos() as u64;
        if let Some(parent) = open.last_mut() {
            parent.children += elapsed;
        }
        // SAFETY: `profiled` keeps the counters alive until it has cleared `ACTIVE` and the
        // kernel call (every thread of which ends before the call returns) is over.
        let counters = unsafe { &*counters };
        let i = id as usize;
        if let (Some(nanos), Some(calls)) = (counters.nanos.get(i), counters.calls.get(i)) {
            nanos.fetch_add(elapsed.saturating_sub(frame.children), Ordering::Relaxed);
            calls.fetch_add(1, Ordering::Relaxed);
        }
    });
}
