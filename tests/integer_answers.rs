//! Integer outputs computed through float arithmetic are checked with the stated tolerance
//! (`strata::dsl::random::Tolerance`): compiled code fuses `a * b + c` into one multiply-add
//! (one rounding, the reference rounds twice), so a float one ulp away from the reference's can
//! cross a rounding boundary on its way to an integer. `strata run` called such a legal
//! schedule's answer WRONG (a local Laplacian's `u16` output: "element 97 is U16(37937),
//! expected U16(37938)").

mod common;
use common::{strata, text};
use std::path::PathBuf;
use strata::Buffer;

/// `(x * y + z) * 2^24` truncated: `x * y` is `1 + 2^-11 + 2^-24`, which f32 rounds to
/// `1 + 2^-11`, so the reference's sum is 0 and a fused multiply-add's is `2^-24`: the output
/// is 0 or 1 depending on whether the backend fuses.
const KERNEL: &str = "kernel fused(X: f32[N], Y: f32[N], Z: f32[N]) -> out: u16[N] {
    out(i) = u16((X(i) * Y(i) + Z(i)) * 16777216.0);
}
";

fn dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("strata-integer-answers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn an_integer_one_unit_off_through_a_fused_multiply_add_matches() {
    let dir = dir();
    let kernel = dir.join("fused.strata");
    std::fs::write(&kernel, KERNEL).unwrap();
    let near_one = 1.0 + 2f32.powi(-12);
    let inputs = [
        ("X", near_one),
        ("Y", near_one),
        ("Z", -(1.0 + 2f32.powi(-11))),
    ];
    let mut args = vec!["run".to_string(), kernel.display().to_string()];
    for (name, value) in inputs {
        let path = dir.join(format!("{name}.npy"));
        let buffer = Buffer::from_vec(&[4], vec![value; 4]).unwrap();
        strata::io::write(&path, &buffer, "test input").unwrap();
        args.extend(["--input".into(), format!("{name}={}", path.display())]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = strata(&args);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("answer: matches the reference (integers computed through floats"),
        "{stdout}"
    );
}
