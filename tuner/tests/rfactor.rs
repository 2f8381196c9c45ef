//! The rfactor gene: a full reduction (the dot product's, whose only loop is the reduction)
//! may be factored into parallel pieces, each a vectorized fold. Only such stages have the
//! gene; the seeds factor them; every piece size gives a legal schedule that computes the
//! reference's answer; random genomes and mutations reach it.

use rand::rngs::StdRng;
use rand::SeedableRng;
use strata_dsl::evaluate;
use strata_dsl::random::{agree, random_args};
use strata_scheduler::interp::interpret;
use strata_scheduler::lower::lower;
use strata_testkit::example;
use strata_tuner::space::{Genome, Space, RFACTOR_CHUNKS};

#[test]
fn only_full_reductions_have_the_gene() {
    let dot = Space::new(&example("dot"));
    let factored: Vec<_> = (dot.stages.iter())
        .filter_map(|s| s.rfactor.clone())
        .collect();
    assert_eq!(factored, ["k"]);
    for name in ["matmul", "softmax", "conv2d", "histogram", "blur3x3"] {
        let space = Space::new(&example(name));
        assert!(
            space.stages.iter().all(|s| s.rfactor.is_none()),
            "{name} has rows or columns to run in parallel"
        );
    }
}

#[test]
fn every_piece_size_computes_the_dot_product() {
    let pipeline = example("dot");
    let space = Space::new(&pipeline);
    let stage = (space.stages.iter())
        .position(|s| s.rfactor.is_some())
        .unwrap();
    for chunk in 0..RFACTOR_CHUNKS.len() {
        for vector in 0..space.widths.len() {
            let mut g = space.default_genome();
            g.stages[stage].rfactor = chunk as u8;
            g.stages[stage].vector = vector as u8;
            let schedule = space.schedule(&g).expect("a legal schedule");
            let text = schedule.to_string();
            assert_eq!(text.contains("rfactor("), chunk > 0, "{text}");
            let kernel = lower(&pipeline, &schedule).unwrap();
            for n in [0, 3, 1024, 70000] {
                let sizes = strata_dsl::sizes(&[("N", n)]);
                let args = random_args(&pipeline, &sizes, &mut StdRng::seed_from_u64(n as u64));
                let args = args.unwrap();
                let expected = evaluate(&pipeline, &args).unwrap();
                let got = interpret(&kernel, &args).unwrap();
                agree(&got, &expected, 1e-4).unwrap_or_else(|e| panic!("{text} N={n}: {e}"));
            }
        }
    }
}

#[test]
fn seeds_and_the_search_factor_the_dot_product() {
    let space = Space::new(&example("dot"));
    let text = |g: &Genome| space.schedule(g).map(|s| s.to_string()).unwrap_or_default();
    let seeds = space.seeds();
    assert!(
        seeds.iter().any(|g| text(g).contains("parallel(k_rf)")),
        "{:?}",
        seeds.iter().map(text).collect::<Vec<_>>()
    );
    let mut rng = StdRng::seed_from_u64(1);
    let random = (0..40).filter(|_| text(&space.random(&mut rng)).contains("rfactor("));
    assert!(random.count() >= 10);
    let start = space.default_genome();
    let mutated = (0..40).filter(|_| text(&space.mutate(&start, &mut rng)).contains("rfactor("));
    assert!(mutated.count() >= 5);
}
