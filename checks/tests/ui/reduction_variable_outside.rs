fn main() {
    let _k = strata::kernel! {
        kernel rowsum(X: f32[R, C]) -> S: f32[R] {
            S(r) = sum(c in 0..C) X(r, c) + 0.0 * f32(0);
            T(r) = X(r, c);
        }
    };
}
