//! `strata roofline --quick --json`: every figure is positive and finite, and the f32x4 fma peak
//! beats the scalar one.

use std::process::Command;

#[test]
fn quick_json_roofline_is_sane() {
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["roofline", "--quick", "--json"])
        .output()
        .expect("the strata binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON object");
    let figure = |name: &str| -> f64 {
        let x = v[name]
            .as_f64()
            .unwrap_or_else(|| panic!("{name} is a number: {stdout}"));
        assert!(x.is_finite() && x > 0.0, "{name} = {x}: {stdout}");
        x
    };
    let vector = figure("f32x4_fma_gflops");
    let scalar = figure("f32_fma_gflops");
    assert!(vector > scalar, "f32x4 {vector} <= f32 {scalar}: {stdout}");
    figure("copy_workload_1thread_gbps");
    figure("copy_workload_all_threads_gbps");
    // The large copy is skipped (null, with a reason) only when its buffers cannot be allocated.
    if v["large_copy_skipped"].is_null() {
        figure("copy_large_1thread_gbps");
        figure("copy_large_all_threads_gbps");
    } else {
        assert!(v["large_copy_skipped"].is_string(), "{stdout}");
        assert!(v["copy_large_1thread_gbps"].is_null(), "{stdout}");
    }
    assert!(figure("repetitions") >= 1.0);
    assert!(figure("all_threads") >= 1.0);
}
