//! Golden files of lowering pass by pass (`lower::lower_passes`, what `STRATA_LOG_PASSES=1`
//! prints): the loop IR after every named pass for three example kernels under their hand
//! schedules, so a change to one pass shows up as a diff at that pass, not only in the final
//! IR (`golden.rs`). Cranelift's filetests are the model. Refresh an intended change with
//! `INSTA_UPDATE=always`.

use strata_dsl::parse_kernel;
use strata_scheduler::lower::lower_passes;
use strata_scheduler::schedule::text::parse_schedule;

fn example_file(dir: &str, name: &str, ext: &str) -> String {
    let path = format!(
        "{}/../examples/{dir}/{name}.{ext}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every pass's IR of `name` under its hand schedule, as one text.
fn passes(name: &str) -> String {
    let pipeline = parse_kernel(&example_file("kernels", name, "strata"), name).unwrap();
    let schedule = parse_schedule(&example_file("schedules", name, "sched")).unwrap();
    let mut text = String::new();
    for p in lower_passes(&pipeline, &schedule).unwrap_or_else(|e| panic!("{name}: {e}")) {
        match p.ir {
            Some(ir) => text += &format!("-- after {}:\n{ir}\n", p.pass),
            None => text += &format!("-- after {} (unchanged)\n", p.pass),
        }
    }
    text
}

#[test]
fn blur3x3_pass_by_pass() {
    insta::assert_snapshot!(passes("blur3x3"));
}

#[test]
fn matmul_pass_by_pass() {
    insta::assert_snapshot!(passes("matmul"));
}

#[test]
fn softmax_pass_by_pass() {
    insta::assert_snapshot!(passes("softmax"));
}

/// The passes come in lowering's order, each named once (a version's passes once per version;
/// these kernels have one), and the last pass's IR is the kernel `lower` gives.
#[test]
fn the_passes_end_in_the_lowered_kernel() {
    let pipeline = parse_kernel(&example_file("kernels", "blur3x3", "strata"), "blur3x3").unwrap();
    let schedule = parse_schedule(&example_file("schedules", "blur3x3", "sched")).unwrap();
    let passes = lower_passes(&pipeline, &schedule).unwrap();
    let names: Vec<&str> = passes.iter().map(|p| p.pass.as_str()).collect();
    assert_eq!(names.first(), Some(&"inlining"));
    assert_eq!(names.last(), Some(&"vector accumulators"));
    let last_changed = passes.iter().rev().find_map(|p| p.ir.clone()).unwrap();
    let lowered = strata_scheduler::lower::lower(&pipeline, &schedule).unwrap();
    assert_eq!(last_changed, lowered.body.to_string());
}
