fn main() {
    let _blur = strata::kernel! {
        kernel blur(input: u16[H, W]) -> out: u16[H, W] {
            out(y, x) = input(y, x) + u32(1);
        }
    };
}
