//! The schedule language's limits, in one place: what a directive may ask for before it is
//! refused (each with the reason it exists), shared by the rules that check them and the
//! errors that cite them.

/// The largest vector width a directive may ask for (an unroll factor may be 4 times more).
pub const MAX_LANES: i64 = 64;

/// The largest split factor. Loop bounds are `i32`: with extents at most 2^30 (the call
/// boundary's limit, `strata_dsl::signature::MAX_EXTENT`), an extent rounded up to a multiple
/// of the factor, `xo * factor + xi` and a stencil's offsets all stay inside `i32`.
pub const MAX_SPLIT_FACTOR: i64 = 1 << 24;

/// The most copies of one stage's body unrolling may make. Unroll factors are capped per loop
/// (`loops::max_lanes`), but nested unrolled loops multiply: 256 x 256 x 4 copies took minutes
/// and gigabytes to compile. The hand schedules unroll 8 copies at most.
pub const MAX_UNROLLED_COPIES: u64 = 1024;

/// The most versions one schedule may lower to (the product over specialized stages of their
/// cases plus the general one): each is a whole lowering and a whole copy of the kernel's code.
pub const MAX_VERSIONS: usize = 16;
