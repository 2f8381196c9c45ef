//! The packing gene: a contraction's strided operand (sgemm's B, conv2d's weights) copied
//! into a contiguous buffer at an outer tile loop, as Halide's sgemm schedule packs B. The
//! seeds include a packed register tile, its schedule validates, and it computes what the
//! unpacked one computes.

use strata_dsl::evaluate;
use strata_dsl::random::{agree, random_args};
use strata_scheduler::interp::interpret;
use strata_scheduler::lower::lower;
use strata_scheduler::{Directive, Schedule};
use strata_testkit::example;
use strata_tuner::space::{Genome, Pack, Space};

/// The seeds that pack, with their schedules.
fn packed_seeds(space: &Space) -> Vec<(Genome, Schedule)> {
    space
        .seeds()
        .into_iter()
        .filter(|g| g.stages.iter().any(|s| s.pack))
        .map(|g| {
            let schedule = space.schedule(&g).expect("a seed is a legal schedule");
            (g, schedule)
        })
        .collect()
}

fn pack_of(space: &Space) -> Vec<Pack> {
    space.stages.iter().filter_map(|s| s.pack.clone()).collect()
}

#[test]
fn the_strided_operands_are_sgemms_b_and_conv2ds_weights() {
    let sgemm = Space::new(&example("matmul"));
    assert_eq!(
        pack_of(&sgemm),
        [Pack {
            operand: "B".into(),
            pure: vec!["j".into()],
            vars: vec!["k".into(), "j".into()],
            storage: vec!["k".into(), "j".into()],
        }]
    );
    let conv = Space::new(&example("conv2d"));
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        pack_of(&conv),
        [Pack {
            operand: "weights".into(),
            pure: strings(&["f"]),
            vars: strings(&["f", "c", "ky", "kx"]),
            storage: strings(&["c", "ky", "kx", "f"]),
        }]
    );
    // Neither a stencil nor a reduction of one operand is a contraction.
    assert!(pack_of(&Space::new(&example("softmax"))).is_empty());
    assert!(pack_of(&Space::new(&example("blur3x3"))).is_empty());
}

/// sgemm's packed seed copies B per column tile, that tile loop outermost, and computes the
/// same bits as the seed that differs only in not packing.
#[test]
fn sgemm_seeds_pack_b_per_column_tile() {
    let pipeline = example("matmul");
    let space = Space::new(&pipeline);
    let packed = packed_seeds(&space);
    assert_eq!(packed.len(), 1, "{packed:?}");
    let (genome, schedule) = &packed[0];
    let text = schedule.to_string();
    assert!(text.contains(".wrap(B, B_p)"), "{text}");
    assert!(
        text.contains("B_p: compute_at(C.update(0), j_o).vectorize(j, 8)"),
        "{text}"
    );
    let update = schedule.directives("C", strata_scheduler::StageRef::Update(0));
    let order = update.iter().find_map(|d| match d {
        Directive::Reorder(order) => Some(order.clone()),
        _ => None,
    });
    assert_eq!(order.as_ref().and_then(|o| o.first()).unwrap(), "j_o");

    let mut plain = genome.clone();
    plain.stages.iter_mut().for_each(|s| s.pack = false);
    let plain = space.schedule(&plain).unwrap();
    let sizes = strata_dsl::sizes(&[("M", 9), ("N", 20), ("K", 7)]);
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(3);
    let args = random_args(&pipeline, &sizes, &mut rng).unwrap();
    let run = |s: &Schedule| interpret(&lower(&pipeline, s).unwrap(), &args).unwrap();
    let got = run(schedule);
    assert_eq!(got, run(&plain), "{text}\n--\n{plain}");
    agree(&got, &evaluate(&pipeline, &args).unwrap(), 1e-4).unwrap();
}

/// conv2d's packed seed stores the copy with the filters innermost.
#[test]
fn conv2d_seeds_pack_the_weights_filters_innermost() {
    let space = Space::new(&example("conv2d"));
    let packed = packed_seeds(&space);
    assert!(!packed.is_empty());
    for (_, schedule) in packed {
        let text = schedule.to_string();
        assert!(text.contains(".wrap(weights, weights_p)"), "{text}");
        assert!(
            text.contains(".reorder_storage(c, ky, kx, f).reorder(c, ky, kx, f)"),
            "{text}"
        );
    }
}

/// conv2d's register-tile seeds unroll rows of output channels (`f`: the rows share each
/// input vector, as sgemm's rows of A share each vector of B), 4 or 8 of them, and split the
/// channel reduction `c` by 2, not the 3-wide `kx` (a guarded half iteration), its outer loop
/// innermost of the reductions; they compute the reference's answer. sgemm's tile is as it
/// was: rows of `i`, `k` unrolled.
#[test]
fn register_tiles_take_rows_that_share_a_vector_and_a_wide_reduction() {
    let tile_of = |name: &str| {
        let space = Space::new(&example(name));
        space.stages.iter().find_map(|s| s.tile.clone()).unwrap()
    };
    let conv = tile_of("conv2d");
    assert_eq!((conv.rows.as_str(), conv.reduction.as_str()), ("f", "c"));
    let sgemm = tile_of("matmul");
    assert_eq!((sgemm.rows.as_str(), sgemm.reduction.as_str()), ("i", "k"));
    assert!(Space::new(&example("blur3x3"))
        .stages
        .iter()
        .all(|s| s.tile.is_none()));

    let pipeline = example("conv2d_staged");
    let space = Space::new(&pipeline);
    let tiles: Vec<Schedule> = space
        .seeds()
        .into_iter()
        .filter(|g| g.stages.iter().any(|s| s.unroll_reduction))
        .map(|g| space.schedule(&g).unwrap())
        .collect();
    assert!(!tiles.is_empty());
    let sizes = strata_dsl::sizes(&[("N", 1), ("C", 5), ("F", 7), ("H", 6), ("W", 11)]);
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(5);
    let args = random_args(&pipeline, &sizes, &mut rng).unwrap();
    let expected = evaluate(&pipeline, &args).unwrap();
    let mut rows = std::collections::BTreeSet::new();
    for schedule in &tiles {
        let text = schedule.to_string();
        let update = text
            .lines()
            .find(|l| l.starts_with("conv.update(0)"))
            .unwrap();
        for part in [
            "split(f, f_o, f_i, ",
            "split(c, c_o, c_i, 2)",
            "unroll(c_i, 2)",
        ] {
            assert!(update.contains(part), "{part} in {text}");
        }
        // The loop around the unrolled body is the long `c_o`.
        assert!(update.contains("ky, kx, c_o, c_i, f_i, x_i)"), "{text}");
        assert!(
            !update.contains("split(kx") && !update.contains("split(y"),
            "{text}"
        );
        rows.insert(update.contains("split(f, f_o, f_i, 8)"));
        let got = interpret(&lower(&pipeline, schedule).unwrap(), &args).unwrap();
        agree(&got, &expected, 1e-4).unwrap_or_else(|e| panic!("{text}: {e}"));
    }
    assert_eq!(rows.len(), 2, "tiles of 4 rows and of 8");
}
