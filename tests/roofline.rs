//! `strata roofline --quick --json`: every figure is positive and finite, and the f32x4 fma peak
//! beats the scalar one; LLVM's peaks are there exactly when LLVM is built in, one per register
//! width the host has.

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
    check_llvm(&v, &stdout);
}

/// The `backends` list and the `llvm` figures: null without the feature, else no error and a
/// positive peak for xmm (4 lanes) and each wider register, lanes doubling.
fn check_llvm(v: &serde_json::Value, stdout: &str) {
    let backends: Vec<&str> = v["backends"]
        .as_array()
        .unwrap_or_else(|| panic!("backends is a list: {stdout}"))
        .iter()
        .filter_map(|b| b.as_str())
        .collect();
    if !cfg!(feature = "llvm") {
        assert_eq!(backends, ["cranelift"], "{stdout}");
        assert!(v["llvm"].is_null(), "{stdout}");
        return;
    }
    assert_eq!(backends, ["cranelift", "llvm"], "{stdout}");
    assert!(v["llvm"]["error"].is_null(), "{stdout}");
    let peaks = v["llvm"]["peaks"]
        .as_array()
        .unwrap_or_else(|| panic!("llvm.peaks is a list: {stdout}"));
    assert_eq!(peaks.first().map(|p| &p["register"]), Some(&"xmm".into()));
    let mut lanes = 4;
    for peak in peaks {
        assert_eq!(peak["lanes"], lanes, "{stdout}");
        let gflops = peak["fma_gflops"].as_f64().unwrap_or(0.0);
        assert!(gflops.is_finite() && gflops > 0.0, "{stdout}");
        lanes *= 2;
    }
}
