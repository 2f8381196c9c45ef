//! Golden files of the mid rung: the loop IR of every example kernel under its default
//! schedule and under its hand-written schedule (`examples/schedules/`), at a fixed shape.
//! An intended change to lowering shows up as a diff here; refresh with `INSTA_UPDATE=always`.

use strata_scheduler::lower::{bind_sizes, lower};
use strata_scheduler::schedule::text::parse_schedule;
use strata_scheduler::Schedule;
use strata_testkit::example;

const EXAMPLES: [(&str, &[(&str, i64)]); 7] = [
    ("matmul", &[("M", 64), ("N", 64), ("K", 64)]),
    ("blur3x3", &[("H", 66), ("W", 130)]),
    ("softmax", &[("R", 16), ("C", 100)]),
    (
        "conv2d",
        &[("N", 1), ("C", 4), ("F", 4), ("H", 10), ("W", 18)],
    ),
    ("histogram", &[("H", 32), ("W", 40)]),
    ("gaussian5", &[("H", 64), ("W", 128)]),
    ("brighten", &[("H", 16), ("W", 64)]),
];

fn hand_schedule(name: &str) -> Schedule {
    let path = format!(
        "{}/../examples/schedules/{name}.sched",
        env!("CARGO_MANIFEST_DIR")
    );
    parse_schedule(&std::fs::read_to_string(&path).unwrap()).unwrap_or_else(|e| panic!("{e}"))
}

fn printed(name: &str, schedule: &Schedule, sizes: &[(&str, i64)]) -> String {
    let kernel = lower(&example(name), schedule).unwrap_or_else(|e| panic!("{name}: {e}"));
    bind_sizes(&kernel, &strata_dsl::sizes(sizes))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .to_string()
}

#[test]
fn default_schedules() {
    for (name, sizes) in EXAMPLES {
        insta::assert_snapshot!(
            format!("{name}_default"),
            printed(name, &Schedule::new(), sizes)
        );
    }
}

#[test]
fn hand_schedules() {
    for (name, sizes) in EXAMPLES {
        insta::assert_snapshot!(
            format!("{name}_hand"),
            printed(name, &hand_schedule(name), sizes)
        );
    }
}

/// The hand conv2d schedule on a width its vectors do not divide: the tail's lanes loop is
/// interchanged outside the reduction loops (pass `interchange_lanes`).
#[test]
fn conv2d_tail_lanes_interchanged() {
    let sizes: &[(&str, i64)] = &[("N", 1), ("C", 4), ("F", 8), ("H", 5), ("W", 9)];
    let text = printed("conv2d", &hand_schedule("conv2d"), sizes);
    assert!(text.contains("lanes for out.s1.xi"), "{text}");
    insta::assert_snapshot!("conv2d_hand_tail", text);
}

/// sgemm with A and B packed (`examples/schedules/matmul_packed.sched`): the copy loop nests
/// of `Ap` (per row block) and `Bp` (per 8-column tile, inside the row block, rows 8 floats
/// apart) and the microkernel reading `Bp` with unit stride.
#[test]
fn matmul_packed() {
    let sizes: &[(&str, i64)] = &[("M", 64), ("N", 64), ("K", 64)];
    let text = printed("matmul", &hand_schedule("matmul_packed"), sizes);
    assert!(text.contains("allocate Bp: f32[512]"), "{text}");
    assert!(text.contains("Bp[ramp(C.s1.k1 * 8, 1, 8)]"), "{text}");
    insta::assert_snapshot!("matmul_packed", text);
}

/// conv2d with the weights packed, the 8 filters of a block innermost
/// (`examples/schedules/conv2d_packed.sched`).
#[test]
fn conv2d_packed() {
    let sizes: &[(&str, i64)] = &[("N", 1), ("C", 4), ("F", 8), ("H", 10), ("W", 18)];
    let text = printed("conv2d", &hand_schedule("conv2d_packed"), sizes);
    insta::assert_snapshot!("conv2d_packed", text);
}
