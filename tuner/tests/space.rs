//! The search space per backend: Cranelift's candidates stay what they were before the space
//! learned about backends (the same seeds, the same sequence for the same seed), and LLVM's
//! vector widths follow the host's native registers.

use sha2::{Digest, Sha256};
use strata_dsl::Dtype;
use strata_jit::Backend;
use strata_tuner::space::{vector_widths, Space, WIDTHS};
use strata_tuner::strategy::Searcher;
use strata_tuner::worker::worker_backend;
use strata_tuner::StrategyKind;

fn matmul() -> strata_dsl::Pipeline {
    strata_dsl::parse_kernel("kernel mm(A: f32[M, K], B: f32[K, N]) -> C: f32[M, N] { C(i, j) = sum(k in 0..K) A(i, k) * B(k, j); }", "mm").unwrap()
}

fn softmax() -> strata_dsl::Pipeline {
    strata_dsl::parse_kernel(
        "kernel softmax(X: f32[R, C]) -> P: f32[R, C] {
            mx(r) = max(c in 0..C) X(r, c);
            e(r, c) = exp(X(r, c) - mx(r));
            s(r) = sum(c in 0..C) e(r, c);
            P(r, c) = e(r, c) / s(r);
        }",
        "softmax",
    )
    .unwrap()
}

fn blur() -> strata_dsl::Pipeline {
    strata_dsl::parse_kernel(
        "kernel blur(I: u16[H, W]) -> out: u16[H - 2, W - 2] {
            bx(y, x) = (u32(I(y, x)) + u32(I(y, x + 1)) + u32(I(y, x + 2))) / 3;
            out(y, x) = u16((bx(y, x) + bx(y + 1, x) + bx(y + 2, x)) / 3);
        }",
        "blur",
    )
    .unwrap()
}

/// A made-up time that depends only on the schedule.
fn synthetic_seconds(hash: &str) -> f64 {
    let n = u64::from_str_radix(&hash[..8], 16).unwrap_or(1);
    1e-3 * (1.0 + (n % 1000) as f64 / 100.0)
}

/// The schedule texts `kind` proposes first for `space` and `seed`, timed synthetically.
fn proposals(space: Space, kind: StrategyKind, seed: u64, n: usize) -> Vec<String> {
    let mut searcher = Searcher::new(kind, space, seed);
    let mut texts = Vec::new();
    for _ in 0..n {
        let Some(c) = searcher.propose() else { break };
        searcher.observe(&c.genome, Some(synthetic_seconds(&c.hash)));
        texts.push(c.schedule.to_string());
    }
    texts
}

/// SHA-256 of every proposal of every strategy for three kernels (seeds 1 and 7), in order.
fn cranelift_digest(make: impl Fn(&strata_dsl::Pipeline) -> Space) -> String {
    let mut hasher = Sha256::new();
    for pipeline in [matmul(), softmax(), blur()] {
        for kind in [
            StrategyKind::Random,
            StrategyKind::Evolve,
            StrategyKind::Model,
        ] {
            for seed in [1, 7] {
                for text in proposals(make(&pipeline), kind, seed, 40) {
                    hasher.update(text.as_bytes());
                    hasher.update(b"\n--\n");
                }
            }
        }
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The digest of the proposals before the space knew backends (commit c4e798f's space.rs,
/// "2080ab11..."), plus matmul's seed that packs B (the packed register tile; softmax's and
/// blur's proposals have no contraction to pack and are unchanged by it), then ("7491d0a9...")
/// with proposals canonical (`schedule::canonical`: no directive that changes nothing), then
/// ("956744e2...") with `Place::Slide` among the random placements (stored one loop out), then
/// ("bfd42367...") with the model's pool ranked as genomes and validated best first (the pool
/// no longer holds only legal schedules, so the model picks among slightly different ones),
/// then ("cfc80784...") with matmul's seeds including an 8x4 register tile (the template a
/// pipeline with a contraction gets; softmax and blur have none).
const CRANELIFT_PROPOSALS: &str =
    "37a171d5faf9e7caad36caf5ed9469c14aa5f57e5730ffd785250f2c3172eff1";

#[test]
fn cranelift_proposes_what_it_proposed_before_backends() {
    let digest = cranelift_digest(Space::new);
    assert_eq!(digest, CRANELIFT_PROPOSALS);
}

#[test]
fn cranelift_keeps_its_widths_for_every_element_type() {
    for pipeline in [matmul(), blur()] {
        let space = Space::new(&pipeline);
        assert_eq!(space.backend, Backend::Cranelift);
        assert_eq!(space.widths, WIDTHS);
        assert_eq!(
            space.native_lanes, 4,
            "four 32-bit lanes per 128-bit register"
        );
    }
    assert_eq!(vector_widths(Backend::Cranelift, 16), WIDTHS);
}

/// LLVM's widths are powers of two from a quarter register (at least 4) to two registers (at
/// least 16, at most the scheduler's 64 lanes), whatever the host.
#[test]
fn llvm_widths_reach_two_native_registers() {
    assert_eq!(vector_widths(Backend::Llvm, 16), [0, 4, 8, 16, 32]); // f32, AVX-512
    assert_eq!(vector_widths(Backend::Llvm, 8), [0, 4, 8, 16]); // f32, AVX2; f64, AVX-512
    assert_eq!(vector_widths(Backend::Llvm, 4), [0, 4, 8, 16]); // f32, SSE
    assert_eq!(vector_widths(Backend::Llvm, 32), [0, 8, 16, 32, 64]); // u16, AVX-512
    assert_eq!(vector_widths(Backend::Llvm, 64), [0, 16, 32, 64]); // u8, AVX-512
}

/// On this host: the LLVM space of an f32 kernel holds one and two native registers of f32, and
/// every width divides two registers (so each is a whole number of registers or a whole
/// fraction of one); the seeds' register tile is two registers wide.
#[test]
fn llvm_space_on_this_host_follows_its_registers() {
    let native = u32::from(Backend::Llvm.native_lanes(Dtype::F32));
    let space = Space::for_backend(&matmul(), Backend::Llvm);
    assert_eq!(space.native_lanes, native);
    let widths: Vec<u32> = space.widths.iter().copied().filter(|&w| w > 0).collect();
    assert!(widths.contains(&native), "{widths:?} lacks {native}");
    assert!(
        widths.contains(&(2 * native)),
        "{widths:?} lacks {}",
        2 * native
    );
    for w in &widths {
        assert_eq!(
            (2 * native) % w,
            0,
            "{w} does not divide two registers of {native}"
        );
    }
    let texts: Vec<String> = space
        .seeds()
        .iter()
        .filter_map(|g| space.schedule(g))
        .map(|s| s.to_string())
        .collect();
    let pair = 2 * native;
    assert!(
        texts
            .iter()
            .any(|t| t.contains(&format!("split(j, j_o, j_i, {pair})"))
                && t.contains("reorder(i_o, j_o, k_o, k_i, i_i, j_i)")
                && t.contains(&format!("vectorize(j_i, {pair})"))),
        "no register tile {pair} wide among {texts:#?}"
    );
    for text in &texts {
        for width in vectorized_widths(text) {
            assert!(
                widths.contains(&width),
                "seed width {width} not in {widths:?}"
            );
        }
    }
}

/// A kernel of u16 pixels summed in u32 is sized by its widest type, u32.
#[test]
fn llvm_lanes_follow_the_widest_element_type() {
    let space = Space::for_backend(&blur(), Backend::Llvm);
    assert_eq!(
        space.native_lanes,
        u32::from(Backend::Llvm.native_lanes(Dtype::U32))
    );
}

/// Every proposal of an LLVM space is legal and vectorizes only at the space's widths.
#[test]
fn llvm_proposals_use_the_space_widths() {
    for pipeline in [matmul(), softmax(), blur()] {
        let space = Space::for_backend(&pipeline, Backend::Llvm);
        let widths = space.widths.clone();
        let mut vectorized = 0;
        for kind in [StrategyKind::Random, StrategyKind::Model] {
            let space = Space::for_backend(&pipeline, Backend::Llvm);
            for text in proposals(space, kind, 3, 30) {
                for width in vectorized_widths(&text) {
                    assert!(widths.contains(&width), "{width} not in {widths:?}: {text}");
                    vectorized += 1;
                }
            }
        }
        assert!(
            vectorized > 10,
            "only {vectorized} vectorized loops proposed"
        );
    }
}

/// The widths of every `vectorize(v, w)` of a schedule's text.
fn vectorized_widths(text: &str) -> Vec<u32> {
    text.split("vectorize(")
        .skip(1)
        .filter_map(|rest| rest.split(')').next()?.split(", ").nth(1)?.parse().ok())
        .collect()
}

/// A worker reads its backend right after `--strata-worker`; none means Cranelift, an unknown
/// one is an error.
#[test]
fn workers_take_the_backend_from_their_command_line() {
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        worker_backend(&args(&["strata", "--strata-worker", "--backend", "llvm"])),
        Ok(Backend::Llvm)
    );
    assert_eq!(
        worker_backend(&args(&["strata", "--strata-worker"])),
        Ok(Backend::Cranelift)
    );
    assert_eq!(
        worker_backend(&args(&[
            "strata",
            "--strata-worker",
            "x",
            "--backend",
            "llvm"
        ])),
        Ok(Backend::Cranelift),
        "only right after --strata-worker"
    );
    let unknown = worker_backend(&args(&["strata", "--strata-worker", "--backend", "gcc"]));
    assert!(unknown.unwrap_err().contains("unknown backend `gcc`"));
    assert!(worker_backend(&args(&["strata", "--strata-worker", "--backend"])).is_err());
}

#[test]
fn a_sliding_placement_is_stored_one_loop_out_and_slides() {
    use strata_tuner::space::Place;
    let pipeline = blur();
    let space = Space::new(&pipeline);
    let bx = space.funcs.iter().position(|f| f.0 == "bx").unwrap();
    let out_stage = space.stages.iter().position(|s| s.func == "out").unwrap();
    let cases = [
        (
            Place::Slide(0),
            [0, 0],
            "bx: compute_at(out, y).store_root()",
        ),
        // out tiled by 4 x 8: its loops are y_o, x_o, y_i, x_i; bx slides down the tile's rows.
        (
            Place::Slide(2),
            [2, 3],
            "bx: compute_at(out, y_i).store_at(out, x_o)",
        ),
    ];
    for (place, split, expected) in cases {
        let mut g = space.default_genome();
        g.places[bx] = place;
        g.stages[out_stage].split = split.to_vec();
        let schedule = space.schedule(&g).unwrap();
        let text = schedule.to_string();
        assert!(text.contains(expected), "{place:?}: {text}");
        let lowered = strata_scheduler::lower::lower(&pipeline, &schedule).unwrap();
        assert!(
            lowered.to_string().contains(".slid = "),
            "{text}\n{lowered}"
        );
    }
}

/// The placements of a 10-level interpolation's candidate that timed out (trial 13 of a
/// tuning run; `Space::funcs` order).
const TRIAL_13_PLACES: &str = r#"["Inline","Inline",{"At":0},"Inline","Root","Inline","Inline",
    "Inline","Root","Inline","Inline","Inline","Inline","Inline","Inline","Root","Inline","Inline",
    "Root","Inline","Inline","Inline","Inline","Inline","Inline","Inline","Inline","Inline",
    "Inline","Inline","Inline","Root","Inline","Inline","Root","Root","Root","Inline","Root",
    "Inline","Inline","Inline","Inline","Inline","Inline","Root","Root"]"#;

/// A schedule whose largest definition, inlined functions substituted, passes
/// `MAX_INLINED_NODES` is not a point of the space, though lowering would accept it: the
/// interpolation's trial 13 of a tuning run (levels inlined into one another, ~340,000 nodes)
/// timed out at 10 s. Every schedule the space makes of mutated genomes stays within the bound.
#[test]
fn pyramid_levels_inlined_into_one_another_are_left_out() {
    use strata_scheduler::lower::limits::{check_limits, largest_inlined};
    use strata_scheduler::schedule::lift_reductions::lift_reductions;
    use strata_scheduler::schedule::validate::validate;
    use strata_tuner::space::{Place, MAX_INLINED_NODES};
    let pipeline = strata_dsl::parse_kernel(
        &strata_testkit::generate_apps::interpolate(10),
        "interpolate",
    )
    .unwrap();
    let space = Space::new(&pipeline);
    let mut g = space.default_genome();
    // Trial 13's placements, as the tuning database recorded its genome.
    g.places = serde_json::from_str(TRIAL_13_PLACES).unwrap();
    assert!(space.schedule(&g).is_none(), "the space made it");
    // The same placements as a schedule: legal, within lowering's limits, past the bound.
    let mut text = String::new();
    for (i, (name, _, is_output)) in space.funcs.iter().enumerate() {
        match g.places[i] {
            _ if *is_output => {}
            Place::Inline => text += &format!("{name}: compute_inline()\n"),
            Place::Root => text += &format!("{name}: compute_root()\n"),
            Place::At(0) => text += &format!("{name}: compute_at(out, y)\n"),
            other => panic!("{name}: {other:?}"),
        }
    }
    let schedule = strata_scheduler::schedule::text::parse_schedule(&text).unwrap();
    let plan = validate(&lift_reductions(&pipeline), &schedule).unwrap();
    assert!(check_limits(&plan).is_ok());
    let (func, nodes) = largest_inlined(&plan).unwrap();
    assert!(nodes > MAX_INLINED_NODES, "{func}: {nodes}");

    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(5);
    let lifted = lift_reductions(&pipeline);
    // A walk of mutations from a seed, as the search makes its candidates (random genomes of
    // this pipeline, or mutations of the all-inline default genome, are almost never legal).
    let mut made = 0;
    let mut walker = space
        .seeds()
        .into_iter()
        .find(|g| space.schedule(g).is_some())
        .expect("a seed makes a schedule");
    for _ in 0..300 {
        let next = space.mutate(&walker, &mut rng);
        if let Some(s) = space.schedule(&next) {
            let plan = validate(&lifted, &s).unwrap();
            assert!(
                largest_inlined(&plan).unwrap().1 <= MAX_INLINED_NODES,
                "{s}"
            );
            made += 1;
            walker = next;
        }
    }
    assert!(made >= 20, "only {made} of 300 mutations made schedules");
}
