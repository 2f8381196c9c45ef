fn main() {
    let _k = strata::kernel! {
        kernel scale(X: f32[N]) -> Y: f32[N] {
            Y(i) = 2.0 * Z(i);
        }
    };
}
