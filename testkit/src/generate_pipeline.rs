//! Random *pipelines* as kernel text: the generator behind `jit/tests/random_pipelines.rs` and
//! the no-panic tests. Where `generate` draws random schedules of a given kernel, this draws the
//! kernel itself: up to four functions over one or two dimensions, each reading the inputs and
//! any function defined before it, each a pointwise expression, a stencil, an inline reduction,
//! a row reduction (a function of the rows only), or a pure definition followed by updates over
//! a reduction domain (sometimes triangular, `r in x + 1..N`, sometimes with a `where`
//! predicate), scans or histograms (a data-dependent target), with casts between all
//! numeric types, boundary conditions on the inputs, clamped gathers and lookup tables.
//!
//! The text goes through the real parser and checker; a text the checker rejects is a bug of this
//! generator. Every read of an input without a boundary condition is kept inside the input where
//! a margin can do it: the output is smaller than the inputs by a margin grown until, on probe
//! shapes, neither the default schedule's bounds inference (which counts both sides of a
//! `select`) nor the reference evaluator reads outside an input. Where no margin helps (a
//! negative offset, a scan over the whole input) the input gets a boundary condition instead.
//!
//! Floats: operations that turn a tiny float difference into a large one (casts to integers,
//! floor/ceil/round, comparisons) are applied only to floats that every schedule computes
//! bit-identically (input reads, parameters, integers cast to float), so comparing results
//! with a relative tolerance stays meaningful while fused multiply-adds, reassociated sums and
//! the vector `exp` polynomial change the last bits elsewhere. The fast approximations
//! (`fast_exp`, `fast_log`, `fast_pow`) are bit-exact everywhere, but their arguments may carry
//! those differences, so they get the same treatment as `exp`.

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use std::collections::BTreeSet;
use std::collections::HashMap;
use std::fmt::Write as _;
use strata_dsl::random::random_args;
use strata_dsl::Sizes;
use strata_dsl::{evaluate, parse_kernel, Dtype, EvalError, Pipeline, Value};
use strata_scheduler::interp::{eval_expr, VValue};
use strata_scheduler::lower::lower;
use strata_scheduler::{LoweredKernel, Schedule};

/// The most functions (the output included) a generated pipeline defines.
const MAX_STAGES: usize = 4;
/// How deeply generated expressions nest.
const MAX_DEPTH: usize = 3;
/// The largest margin tried before an input gets a boundary condition.
const MAX_MARGIN: i64 = 12;

/// A generated kernel: its text, and what a test needs to pick shapes for it.
#[derive(Clone, Debug)]
pub struct GeneratedKernel {
    /// The kernel text (parses and checks).
    pub text: String,
    /// The size variables, outermost dimension first (`N`, or `N, M`).
    pub sizes: Vec<String>,
    /// How much smaller than its size variable each output dimension is.
    pub margins: Vec<i64>,
    /// The constructs the kernel uses, from [`FEATURES`] (for coverage counts).
    pub features: BTreeSet<&'static str>,
}

/// Every construct the generator draws, as `GeneratedKernel::features` names them.
pub const FEATURES: [&str; 19] = [
    "row reduction",
    "inline reduction",
    "empty window",
    "triangular domain",
    "where predicate",
    "update over a domain",
    "scan",
    "backward scan",
    "histogram",
    "self update",
    "cast",
    "float function",
    "fast math",
    "select",
    "clamped gather",
    "lookup table",
    "boundary condition",
    "scalar parameter",
    "bool function",
];

impl GeneratedKernel {
    /// The checked pipeline of `text`.
    pub fn pipeline(&self) -> Result<Pipeline, String> {
        parse_kernel(&self.text, "generated").map_err(|e| e.to_string())
    }

    /// A random shape: each size is its margin plus 0 (an empty output), 1 (an output of
    /// extent 1), a few more, or now and then a few dozen.
    pub fn random_sizes(&self, rng: &mut impl Rng) -> Sizes {
        let mut sizes = Sizes::new();
        for (name, margin) in self.sizes.iter().zip(&self.margins) {
            // Mostly small, sometimes large enough for several full vectors and tiles.
            let extra = match rng.random_range(0..20) {
                0 | 1 => 0,
                2..=5 => 1,
                6 => rng.random_range(20..=70),
                _ => rng.random_range(2..=11),
            };
            sizes.insert(name.clone(), (*margin + extra).max(1));
        }
        sizes
    }
}

/// A random kernel (see the module documentation).
pub fn random_pipeline(rng: &mut impl Rng) -> GeneratedKernel {
    let mut gen = KernelGen::new(rng);
    let stages = rng.random_range(1..=MAX_STAGES);
    for i in 0..stages {
        let name = if i + 1 == stages {
            "out".to_string()
        } else {
            format!("f{i}")
        };
        gen.stage(&name, i + 1 == stages, rng);
    }
    gen.fit_margins(rng)
}

/// What an index is for: a function, an input with a boundary condition, or one without (read
/// at offsets of 0 and up).
#[derive(Clone, Copy, PartialEq)]
enum Reads {
    Function,
    Input,
    InputAbove,
}

/// A read of an input outside it.
#[derive(Clone, Copy, PartialEq)]
struct OutOfBounds {
    /// The input's position in the kernel's parameters.
    input: usize,
    dim: usize,
    /// How far past the end the read was (positive), or the (negative) index below zero.
    over: i64,
}

/// One input of the kernel.
#[derive(Clone)]
struct InputDecl {
    name: String,
    dtype: Dtype,
    /// `None`: a buffer of the kernel's rank over its sizes; `Some(n)`: a 1-D table of `n`.
    table: Option<usize>,
    boundary: Option<String>,
}

/// A function defined so far.
#[derive(Clone)]
struct StageDecl {
    name: String,
    dtype: Dtype,
    /// The kernel's dimensions the function has (all, or the first only for a row reduction).
    dims: Vec<usize>,
}

/// Where the expression being generated sits: which variables index each dimension.
#[derive(Clone, Default)]
struct Scope {
    /// Per dimension, the index expressions reads may start from (`x`, `x + r0`, a scan's `r1`).
    bases: Vec<Vec<String>>,
    /// Per dimension, a reduction variable covering the whole extent `0..size`, for inputs only.
    full: Vec<Option<String>>,
    /// Functions this expression may read (the ones defined before it).
    stages: Vec<StageDecl>,
}

struct KernelGen {
    rank: usize,
    sizes: Vec<String>,
    vars: Vec<String>,
    inputs: Vec<InputDecl>,
    /// Scalar parameters: name and type.
    params: Vec<(String, Dtype)>,
    stages: Vec<StageDecl>,
    /// The statements, in order.
    body: Vec<String>,
    fresh: usize,
    features: BTreeSet<&'static str>,
}

const TYPES: [Dtype; 13] = [
    Dtype::I8,
    Dtype::F32,
    Dtype::F32,
    Dtype::F32,
    Dtype::I32,
    Dtype::I32,
    Dtype::I32,
    Dtype::U8,
    Dtype::U16,
    Dtype::I16,
    Dtype::U32,
    Dtype::I64,
    Dtype::F64,
];

fn random_type(rng: &mut impl Rng) -> Dtype {
    *TYPES.choose(rng).unwrap_or(&Dtype::I32)
}

fn random_boundary(dtype: Dtype, rng: &mut impl Rng) -> Option<String> {
    Some(match rng.random_range(0..10) {
        0 => "clamp_edge".into(),
        1 => "mirror".into(),
        2 => "mirror_interior".into(),
        3 => format!("constant({})", literal(dtype, rng)),
        _ => return None,
    })
}

/// A literal of `dtype`, suffixed so it has that type anywhere.
fn literal(dtype: Dtype, rng: &mut impl Rng) -> String {
    match dtype {
        Dtype::Bool => ["true", "false"].choose(rng).unwrap_or(&"true").to_string(),
        Dtype::F32 | Dtype::F64 => {
            let v = [0.0, 0.5, 1.0, 2.0, -1.5, 0.25, 3.0, -0.125]
                .choose(rng)
                .copied()
                .unwrap_or(1.0);
            format!("{v:?}{dtype}")
        }
        t => {
            let (lo, hi) = t.int_range().unwrap_or((0, 0));
            let v: i128 = match rng.random_range(0..10) {
                0 => lo,
                1 => hi,
                _ => rng.random_range(lo.max(-7)..=hi.min(9)),
            };
            format!("{v}{t}")
        }
    }
}

impl KernelGen {
    fn new(rng: &mut impl Rng) -> KernelGen {
        let rank = rng.random_range(1..=2);
        let (sizes, vars) = if rank == 1 {
            (vec!["N".to_string()], vec!["x".to_string()])
        } else {
            (vec!["N".into(), "M".into()], vec!["y".into(), "x".into()])
        };
        let mut inputs = Vec::new();
        for name in ["A", "B"].iter().take(rng.random_range(1..=2)) {
            let dtype = random_type(rng);
            inputs.push(InputDecl {
                name: name.to_string(),
                dtype,
                table: None,
                boundary: random_boundary(dtype, rng),
            });
        }
        if rng.random_bool(0.25) {
            inputs.push(InputDecl {
                name: "lut".into(),
                dtype: random_type(rng),
                table: Some(256),
                boundary: None,
            });
        }
        let mut params = Vec::new();
        if rng.random_bool(0.3) {
            params.push(("alpha".to_string(), Dtype::F32));
        }
        if rng.random_bool(0.2) {
            params.push(("k".to_string(), Dtype::I32));
        }
        KernelGen {
            rank,
            sizes,
            vars,
            inputs,
            params,
            stages: Vec::new(),
            body: Vec::new(),
            fresh: 0,
            features: BTreeSet::new(),
        }
    }

    fn note(&mut self, feature: &'static str) {
        debug_assert!(FEATURES.contains(&feature), "{feature}");
        self.features.insert(feature);
    }

    fn rvar(&mut self) -> String {
        self.fresh += 1;
        format!("r{}", self.fresh)
    }

    /// The scope of a pure definition: each dimension indexed by its own variable.
    fn pure_scope(&self) -> Scope {
        Scope {
            bases: self.vars.iter().map(|v| vec![v.clone()]).collect(),
            full: vec![None; self.rank],
            stages: self.stages.clone(),
        }
    }

    fn target(&self, name: &str, index: &[String]) -> String {
        format!("{name}({})", index.join(", "))
    }

    /// Defines one function `name` of a random kind.
    fn stage(&mut self, name: &str, is_output: bool, rng: &mut impl Rng) {
        if self.rank == 2 && !is_output && rng.random_bool(0.2) {
            return self.row_reduction(name, rng);
        }
        let dtype = if rng.random_bool(0.05) && !is_output {
            self.note("bool function");
            Dtype::Bool
        } else {
            random_type(rng)
        };
        let scope = self.pure_scope();
        let value = self.expr(dtype, &scope, MAX_DEPTH, rng);
        let pure_target = self.target(name, &self.vars.clone());
        self.body.push(format!("{pure_target} = {value};"));
        if dtype != Dtype::Bool {
            let updates = match rng.random_range(0..10) {
                0..=4 => 0,
                5..=8 => 1,
                _ => 2,
            };
            for _ in 0..updates {
                let update = match rng.random_range(0..4) {
                    0 => self.reduction_update(name, dtype, rng),
                    1 => self.scan(name, dtype, rng),
                    2 => self.histogram(name, dtype, rng),
                    _ => self.self_update(name, dtype, rng),
                };
                self.body.push(update);
            }
        }
        self.stages.push(StageDecl {
            name: name.to_string(),
            dtype,
            dims: (0..self.rank).collect(),
        });
    }

    /// A function of the rows only, reducing each row (softmax's `mx(r)`): `g(y) = op(r in
    /// 0..M) e` where `e` reads inputs and functions at `(y + d, r)`.
    fn row_reduction(&mut self, name: &str, rng: &mut impl Rng) {
        self.note("row reduction");
        let dtype = random_type(rng);
        let mut scope = self.pure_scope();
        let r = self.rvar();
        scope.bases[1].clear();
        scope.full[1] = Some(r.clone());
        let ops: &[&str] = if dtype.is_float() {
            &["sum", "max", "min"]
        } else {
            &["sum", "prod", "max", "min"]
        };
        let op = ops.choose(rng).unwrap_or(&"sum");
        let body = self.expr(dtype, &scope, MAX_DEPTH - 1, rng);
        let (var, size) = (self.vars[0].clone(), self.sizes[1].clone());
        self.body
            .push(format!("{name}({var}) = ({op}({r} in 0..{size}) {body});"));
        self.stages.push(StageDecl {
            name: name.to_string(),
            dtype,
            dims: vec![0],
        });
    }

    /// A random reduction domain for dimension `dim`: a small window (possibly empty) that
    /// offsets the dimension's variable, the whole extent of the inputs, or a triangular part of
    /// it bounded by the dimension's own variable (`x + 1..N`, `0..x`); sometimes with a
    /// `where` predicate.
    fn domain(&mut self, dim: usize, scope: &mut Scope, rng: &mut impl Rng) -> String {
        // The dimension's own variable, when it is a loop of the stage here (bare in the
        // target), which a bound may read.
        let own = Some(self.vars[dim].clone()).filter(|v| scope.bases[dim] == [v.clone()]);
        let r = self.rvar();
        let range = self.range(dim, &r, own.as_deref(), scope, rng);
        if !rng.random_bool(0.2) {
            return format!("{r} in {range}");
        }
        self.note("where predicate");
        let predicate = match (rng.random_range(0..4), own) {
            (0, Some(v)) => format!("{r} != {v}"),
            (1, Some(v)) => format!("({r} + {v}) % 3 != 1"),
            (2, _) => format!("{r} % 2 == 0"),
            _ => format!("{r} < {} - 1", self.sizes[dim]),
        };
        format!("{r} in {range} where {predicate}")
    }

    /// The range of reduction variable `r` of a domain for dimension `dim` (see `domain`).
    fn range(
        &mut self,
        dim: usize,
        r: &str,
        own: Option<&str>,
        scope: &mut Scope,
        rng: &mut impl Rng,
    ) -> String {
        // A dimension with no variable to offset (in a row reduction) takes a whole extent.
        if rng.random_bool(0.5) && !scope.bases[dim].is_empty() {
            let lo = rng.random_range(-1..=1);
            let hi = lo + rng.random_range(0..=3);
            if hi == lo {
                self.note("empty window");
            }
            scope.bases[dim] = scope.bases[dim]
                .iter()
                .map(|base| format!("{base} + {r}"))
                .collect();
            format!("{lo}..{hi}")
        } else {
            let size = self.sizes[dim].clone();
            scope.full[dim] = Some(r.to_string());
            if let Some(v) = own.filter(|_| rng.random_bool(0.4)) {
                self.note("triangular domain");
                return match rng.random_range(0..4) {
                    0 => format!("{v} + 1..{size}"),
                    1 => format!("{v}..{size}"),
                    2 => format!("0..{v} + 1"),
                    _ => format!("0..{v}"),
                };
            }
            match rng.random_range(0..3) {
                0 => format!("0..{size}"),
                1 => format!("1..{size}"),
                _ => format!("0..{size} - 1"),
            }
        }
    }

    /// `f(v) op= e` over a reduction domain, or `f(v) = max(f(v), e)`.
    fn reduction_update(&mut self, name: &str, dtype: Dtype, rng: &mut impl Rng) -> String {
        self.note("update over a domain");
        let mut scope = self.pure_scope();
        let dim = rng.random_range(0..self.rank);
        let domain = self.domain(dim, &mut scope, rng);
        let value = self.expr(dtype, &scope, MAX_DEPTH - 1, rng);
        let target = self.target(name, &self.vars.clone());
        let stmt = match rng.random_range(0..5) {
            0 => format!("{target} += {value}"),
            1 => format!("{target} -= {value}"),
            2 if !dtype.is_float() => format!("{target} *= {value}"),
            3 => format!("{target} = max({target}, {value})"),
            _ => format!("{target} = min({target}, {value})"),
        };
        format!("for ({domain}) {stmt};")
    }

    /// A scan along one dimension: each element combines its predecessor (forwards or
    /// backwards) with itself and a fresh value.
    fn scan(&mut self, name: &str, dtype: Dtype, rng: &mut impl Rng) -> String {
        self.note("scan");
        let dim = rng.random_range(0..self.rank);
        let r = self.rvar();
        let size = self.sizes[dim].clone();
        let lo = rng.random_range(1..=2);
        let (domain, here, prev) = if rng.random_bool(0.7) {
            (
                format!("{r} in {lo}..{size}"),
                r.clone(),
                format!("{r} - {lo}"),
            )
        } else {
            self.note("backward scan");
            (
                format!("{r} in 0..{size} - {lo}"),
                format!("{size} - {lo} - 1 - {r}"),
                format!("{size} - 1 - {r}"),
            )
        };
        let mut scope = self.pure_scope();
        scope.bases[dim] = vec![here.clone()];
        let extra = self.expr(dtype, &scope, 1, rng);
        let with = |index: &str| {
            let mut args = self.vars.clone();
            args[dim] = index.to_string();
            self.target(name, &args)
        };
        let (target, before) = (with(&here), with(&prev));
        let value = if dtype.is_float() {
            format!("{before} * 0.5 + {extra}")
        } else {
            match rng.random_range(0..3) {
                0 => format!("{before} + {target}"),
                1 => format!("max({before}, {extra})"),
                _ => format!("{before} * 3 + {extra}"),
            }
        };
        format!("for ({domain}) {target} = {value};")
    }

    /// A histogram: over the whole extent of one dimension, a data-dependent target (clamped,
    /// reduced modulo a constant, or of type u8) is incremented.
    fn histogram(&mut self, name: &str, dtype: Dtype, rng: &mut impl Rng) -> String {
        self.note("histogram");
        let dim = rng.random_range(0..self.rank);
        let r = self.rvar();
        let size = self.sizes[dim].clone();
        let mut scope = self.pure_scope();
        scope.bases[dim] = vec![r.clone()];
        let data = self.read_input(&scope, rng);
        let input_type = self.input_type(&data);
        let bins = rng.random_range(1..=8);
        let index = match rng.random_range(0..3) {
            0 if input_type == Some(Dtype::U8) => data,
            0 | 1 if !input_type.is_some_and(Dtype::is_float) => format!("i32({data}) % {bins}"),
            _ => format!("clamp(i32({data}), 0, {})", bins - 1),
        };
        let mut args = self.vars.clone();
        args[dim] = index;
        let one = if dtype.is_float() {
            format!("1.0{dtype}")
        } else {
            format!("1{dtype}")
        };
        format!(
            "for ({r} in 0..{size}) {} += {one};",
            self.target(name, &args)
        )
    }

    /// An update with no reduction domain that reads the function itself.
    fn self_update(&mut self, name: &str, dtype: Dtype, rng: &mut impl Rng) -> String {
        self.note("self update");
        let scope = self.pure_scope();
        let target = self.target(name, &self.vars.clone());
        let value = self.expr(dtype, &scope, 1, rng);
        let two = if dtype.is_float() { "0.5" } else { "2" };
        format!("{target} = {target} * {two} + {value};")
    }

    fn input_type(&self, read: &str) -> Option<Dtype> {
        let name = read.split('(').next()?;
        self.inputs.iter().find(|i| i.name == name).map(|i| i.dtype)
    }

    /// An expression of type `dtype`.
    fn expr(&mut self, dtype: Dtype, scope: &Scope, depth: usize, rng: &mut impl Rng) -> String {
        if depth == 0 || rng.random_bool(0.2) {
            return self.leaf(dtype, scope, rng);
        }
        if dtype == Dtype::Bool {
            return self.condition(scope, depth - 1, rng);
        }
        let d = depth - 1;
        match rng.random_range(0..12) {
            // Division and remainder by a constant (the JIT has its own forms for them).
            11 if !dtype.is_float() => {
                let op = ["/", "%"].choose(rng).unwrap_or(&"/");
                let a = self.expr(dtype, scope, d, rng);
                format!("({a} {op} {})", literal(dtype, rng))
            }
            0..=2 => {
                let ops: &[&str] = if dtype.is_float() {
                    &["+", "-", "*"]
                } else {
                    &["+", "-", "*", "/", "%"]
                };
                let op = ops.choose(rng).unwrap_or(&"+");
                let a = self.expr(dtype, scope, d, rng);
                let b = self.expr(dtype, scope, d, rng);
                format!("({a} {op} {b})")
            }
            3 if dtype.is_float() => {
                let a = self.expr(dtype, scope, d, rng);
                let b = self.expr(dtype, scope, d, rng);
                format!("({a} / (abs({b}) + 1.0))")
            }
            4 => {
                let f = ["min", "max"].choose(rng).unwrap_or(&"min");
                let a = self.expr(dtype, scope, d, rng);
                let b = self.expr(dtype, scope, d, rng);
                format!("{f}({a}, {b})")
            }
            5 => {
                let a = self.expr(dtype, scope, d, rng);
                let (lo, hi) = (literal(dtype, rng), literal(dtype, rng));
                match rng.random_range(0..3) {
                    0 => format!("abs({a})"),
                    1 => format!("clamp({a}, min({lo}, {hi}), max({lo}, {hi}))"),
                    // `-5u32` is a literal that does not fit; negating a cast wraps.
                    _ if dtype.is_unsigned_int() => format!("(-{dtype}({a}))"),
                    _ => format!("(-{a})"),
                }
            }
            6 => {
                self.note("select");
                let c = self.condition(scope, d, rng);
                let a = self.expr(dtype, scope, d, rng);
                let b = self.expr(dtype, scope, d, rng);
                format!("select({c}, {a}, {b})")
            }
            7 | 8 => self.cast(dtype, scope, d, rng),
            9 if dtype.is_float() => self.float_function(dtype, scope, d, rng),
            10 => self.inline_reduction(dtype, scope, d, rng),
            _ => self.leaf(dtype, scope, rng),
        }
    }

    fn float_function(
        &mut self,
        dtype: Dtype,
        scope: &Scope,
        depth: usize,
        rng: &mut impl Rng,
    ) -> String {
        self.note("float function");
        let a = self.expr(dtype, scope, depth, rng);
        // f32 also draws the fast approximations (f32 only), computed bit for bit alike by
        // every executor.
        let choices = if dtype == Dtype::F32 { 10 } else { 7 };
        match rng.random_range(0..choices) {
            7 => self.fast_function(&a, rng),
            8 | 9 => {
                self.note("fast math");
                format!("fast_exp(clamp({a}, -4.0, 4.0))")
            }
            0 => format!("sqrt(abs({a}))"),
            1 => format!("exp(clamp({a}, -4.0, 4.0))"),
            2 => format!("log(abs({a}) + 1.0)"),
            3 => format!("sin({a})"),
            4 => format!("cos({a})"),
            5 => format!("tanh({a})"),
            _ => {
                let exact = self.exact_float(dtype, scope, rng);
                let f = ["floor", "ceil", "round"].choose(rng).unwrap_or(&"floor");
                format!("{f}({exact} * 2.5)")
            }
        }
    }

    /// `fast_log` or `fast_pow` of `a` (an f32 expression), its argument kept positive and
    /// moderate so the 1e-4 tolerance of the comparisons covers the reassociated arithmetic
    /// around it.
    fn fast_function(&mut self, a: &str, rng: &mut impl Rng) -> String {
        self.note("fast math");
        if rng.random_bool(0.5) {
            format!("fast_log(abs({a}) + 1.0)")
        } else {
            let y = ["0.5", "2.0", "-1.5", "3.0"].choose(rng).unwrap_or(&"2.0");
            format!("fast_pow(min(abs({a}), 16.0) + 0.25, {y})")
        }
    }

    /// `dtype` from a value of another type. A float becoming an integer is an exact float
    /// (see the module documentation).
    fn cast(&mut self, dtype: Dtype, scope: &Scope, depth: usize, rng: &mut impl Rng) -> String {
        self.note("cast");
        let from = random_type(rng);
        let value = if from.is_float() && !dtype.is_float() {
            self.exact_float(from, scope, rng)
        } else {
            self.expr(from, scope, depth, rng)
        };
        format!("{dtype}({value})")
    }

    /// A float every schedule computes bit for bit: an input read, a parameter or a cast
    /// integer.
    fn exact_float(&mut self, dtype: Dtype, scope: &Scope, rng: &mut impl Rng) -> String {
        match rng.random_range(0..4) {
            0 if self.params.iter().any(|(_, t)| *t == Dtype::F32) => {
                self.note("scalar parameter");
                format!("{dtype}(alpha)")
            }
            1 => {
                let var = scope.bases.iter().flatten().next().cloned();
                format!("{dtype}({})", var.unwrap_or_else(|| "0".into()))
            }
            _ => {
                let read = self.read_input(scope, rng);
                format!("{dtype}({read})")
            }
        }
    }

    /// A bool: a comparison of exact values, a combination of conditions, or a bool function.
    fn condition(&mut self, scope: &Scope, depth: usize, rng: &mut impl Rng) -> String {
        let bool_stage = scope
            .stages
            .iter()
            .filter(|s| s.dtype == Dtype::Bool)
            .cloned()
            .collect::<Vec<_>>();
        match rng.random_range(0..6) {
            0 if depth > 0 => {
                let op = ["&&", "||"].choose(rng).unwrap_or(&"&&");
                let a = self.condition(scope, depth - 1, rng);
                let b = self.condition(scope, depth - 1, rng);
                format!("({a} {op} {b})")
            }
            1 if depth > 0 => format!("(!{})", self.condition(scope, depth - 1, rng)),
            2 if !bool_stage.is_empty() => {
                let stage = bool_stage.choose(rng).cloned();
                let Some(stage) = stage else {
                    return "true".into();
                };
                let index = self.index(scope, &stage.dims, rng);
                format!("{}({index})", stage.name)
            }
            _ => {
                let t = random_type(rng);
                let op = ["<", "<=", ">", ">=", "==", "!="]
                    .choose(rng)
                    .unwrap_or(&"<");
                let (a, b) = if t.is_float() {
                    (
                        self.exact_float(t, scope, rng),
                        self.exact_float(t, scope, rng),
                    )
                } else {
                    let d = depth.min(1);
                    (self.expr(t, scope, d, rng), self.expr(t, scope, d, rng))
                };
                format!("({a} {op} {b})")
            }
        }
    }

    /// `sum`, `prod`, `max` or `min` over a window or the inputs' extent of one dimension.
    fn inline_reduction(
        &mut self,
        dtype: Dtype,
        scope: &Scope,
        depth: usize,
        rng: &mut impl Rng,
    ) -> String {
        self.note("inline reduction");
        let mut inner = scope.clone();
        let dim = rng.random_range(0..self.rank);
        let domain = self.domain(dim, &mut inner, rng);
        let ops: &[&str] = if dtype.is_float() {
            &["sum", "max", "min"]
        } else {
            &["sum", "prod", "max", "min"]
        };
        let op = ops.choose(rng).unwrap_or(&"sum");
        let body = self.expr(dtype, &inner, depth, rng);
        format!("({op}({domain}) {body})")
    }

    /// A read, a literal, a parameter or an index variable, as `dtype`.
    fn leaf(&mut self, dtype: Dtype, scope: &Scope, rng: &mut impl Rng) -> String {
        if dtype == Dtype::Bool {
            return self.condition(scope, 0, rng);
        }
        let (read, from) = match rng.random_range(0..10) {
            0 => return literal(dtype, rng),
            1 => {
                let var = scope.bases.iter().flatten().cloned().collect::<Vec<_>>();
                let var = var.choose(rng).cloned().unwrap_or_else(|| "0".into());
                return format!("{dtype}({var})");
            }
            2 if !self.params.is_empty() => {
                self.note("scalar parameter");
                let param = self.params.choose(rng).cloned();
                param.unwrap_or(("alpha".into(), Dtype::F32))
            }
            3..=5 if !scope.stages.is_empty() => self.read_stage(scope, rng),
            _ => {
                let read = self.read_input(scope, rng);
                let t = self.input_type(&read).unwrap_or(Dtype::I32);
                (read, t)
            }
        };
        let computed_float = from.is_float() && self.input_type(&read).is_none();
        if from == dtype {
            read
        } else if computed_float && !dtype.is_float() {
            // A computed float would become an integer: see the module documentation.
            let exact = self.exact_float(from, scope, rng);
            format!("{dtype}({exact})")
        } else {
            format!("{dtype}({read})")
        }
    }

    /// Index arguments for `dims`: each dimension from one of its bases plus a small offset,
    /// or the reduction variable covering the dimension (mostly for inputs, where it stays in
    /// bounds; always where the dimension has no base).
    fn index(&mut self, scope: &Scope, dims: &[usize], rng: &mut impl Rng) -> String {
        self.index_of(scope, dims, Reads::Function, rng)
    }

    /// Index arguments for an input buffer (every dimension).
    /// Index arguments for one of `inputs` (every dimension). Unless all of them have a boundary
    /// condition the offsets are 0 and up, so that a margin keeps the read in bounds (a read below
    /// zero would need a boundary condition instead).
    fn input_index(&mut self, scope: &Scope, inputs: &[&str], rng: &mut impl Rng) -> String {
        let dims: Vec<usize> = (0..self.rank).collect();
        let bounded = inputs.iter().all(|name| {
            let input = self.inputs.iter().find(|i| &i.name == name);
            input.is_some_and(|i| i.boundary.is_some())
        });
        let reads = if bounded {
            Reads::Input
        } else {
            Reads::InputAbove
        };
        self.index_of(scope, &dims, reads, rng)
    }

    fn index_of(
        &mut self,
        scope: &Scope,
        dims: &[usize],
        reads: Reads,
        rng: &mut impl Rng,
    ) -> String {
        let input = reads != Reads::Function;
        let mut args = Vec::new();
        for &dim in dims {
            if let Some(full) = scope.full[dim].as_ref() {
                let no_base = scope.bases[dim].is_empty();
                if no_base || (input && rng.random_bool(0.7)) {
                    args.push(full.clone());
                    continue;
                }
            }
            let base = scope.bases[dim].choose(rng).cloned().unwrap_or_default();
            let offset: i64 = match rng.random_range(0..4) {
                0 | 1 => 0,
                _ => rng.random_range(-2..=2),
            };
            let offset = if reads == Reads::InputAbove {
                offset.abs()
            } else {
                offset
            };
            args.push(match offset {
                0 => base,
                o if o > 0 => format!("{base} + {o}"),
                o => format!("{base} - {}", -o),
            });
        }
        args.join(", ")
    }

    fn read_stage(&mut self, scope: &Scope, rng: &mut impl Rng) -> (String, Dtype) {
        let stage = scope.stages.choose(rng).cloned();
        let Some(stage) = stage else {
            return ("0".into(), Dtype::I32);
        };
        let index = self.index(scope, &stage.dims, rng);
        (format!("{}({index})", stage.name), stage.dtype)
    }

    /// A read of an input buffer: at an offset of the scope's variables, through a clamped
    /// data-dependent index, or of the lookup table.
    fn read_input(&mut self, scope: &Scope, rng: &mut impl Rng) -> String {
        let buffers: Vec<InputDecl> = self
            .inputs
            .iter()
            .filter(|i| i.table.is_none())
            .cloned()
            .collect();
        let table = self.inputs.iter().find(|i| i.table.is_some()).cloned();
        match rng.random_range(0..12) {
            0 if table.is_some() => {
                self.note("lookup table");
                let index = self.gather_index(scope, rng);
                format!("lut(u8({index}))")
            }
            1 => {
                let input = buffers.choose(rng).cloned();
                let name = input.map(|i| i.name).unwrap_or_else(|| "A".into());
                let mut args: Vec<String> = self
                    .input_index(scope, &[&name], rng)
                    .split(", ")
                    .map(String::from)
                    .collect();
                let dim = rng.random_range(0..self.rank);
                let index = self.gather_index(scope, rng);
                args[dim] = format!("clamp({index}, 0, {} - 1)", self.sizes[dim]);
                self.note("clamped gather");
                format!("{name}({})", args.join(", "))
            }
            _ => {
                let input = buffers.choose(rng).cloned();
                let name = input.map(|i| i.name).unwrap_or_else(|| "A".into());
                format!("{name}({})", self.input_index(scope, &[&name], rng))
            }
        }
    }

    /// A data-dependent i32 index: an input read cast to i32, possibly mixed with a variable.
    fn gather_index(&mut self, scope: &Scope, rng: &mut impl Rng) -> String {
        let buffers: Vec<String> = self
            .inputs
            .iter()
            .filter(|i| i.table.is_none() && !i.dtype.is_float())
            .map(|i| i.name.clone())
            .collect();
        let names: Vec<&str> = buffers.iter().map(String::as_str).collect();
        let index = self.input_index(scope, &names, rng);
        match buffers.choose(rng) {
            Some(name) => format!("i32({name}({index}))"),
            None => {
                let var = scope.bases.iter().flatten().next().cloned();
                format!("({} * 7)", var.unwrap_or_else(|| "0".into()))
            }
        }
    }

    /// The kernel text with the given margins.
    fn render(&self, margins: &[i64]) -> String {
        let mut params = Vec::new();
        for input in &self.inputs {
            let shape = match input.table {
                Some(n) => n.to_string(),
                None => self.sizes.join(", "),
            };
            let boundary = input
                .boundary
                .as_ref()
                .map(|b| format!(" with {b}"))
                .unwrap_or_default();
            params.push(format!(
                "{}: {}[{shape}]{boundary}",
                input.name, input.dtype
            ));
        }
        for (name, dtype) in &self.params {
            params.push(format!("{name}: {dtype}"));
        }
        let extents: Vec<String> = self
            .sizes
            .iter()
            .zip(margins)
            .map(|(s, m)| match m {
                0 => s.clone(),
                m => format!("{s} - {m}"),
            })
            .collect();
        let out_type = self.stages.last().map_or(Dtype::I32, |s| s.dtype);
        let mut text = String::new();
        let _ = writeln!(
            text,
            "kernel generated({}) -> out: {out_type}[{}] {{",
            params.join(", "),
            extents.join(", ")
        );
        for stmt in &self.body {
            let _ = writeln!(text, "    {stmt}");
        }
        text.push('}');
        text.push('\n');
        text
    }

    /// Grows the output's margins until the reference reads no input outside its extent on
    /// probe shapes; an input read below zero, or beyond any margin, gets a boundary condition.
    fn fit_margins(mut self, rng: &mut impl Rng) -> GeneratedKernel {
        let mut margins = vec![0i64; self.rank];
        let seed = rng.random::<u64>();
        let mut last = None;
        for _ in 0..64 {
            let text = self.render(&margins);
            let Some(oob) = self.out_of_bounds(&text, &margins, seed) else {
                break;
            };
            // A read past the end by as much as before did not move with the margin: it
            // reads the whole input (a scan, a full reduction), so no margin helps.
            let absolute = last == Some(oob);
            last = Some(oob);
            let OutOfBounds { input, dim, over } = oob;
            if over < 0 || absolute || margins[dim] >= MAX_MARGIN {
                let dtype = self.inputs[input].dtype;
                self.inputs[input].boundary =
                    Some(if dtype == Dtype::Bool || rng.random_bool(0.5) {
                        "clamp_edge".into()
                    } else {
                        format!("constant({})", literal(dtype, rng))
                    });
            } else {
                margins[dim] += 1;
            }
        }
        if self.inputs.iter().any(|i| i.boundary.is_some()) {
            self.note("boundary condition");
        }
        GeneratedKernel {
            text: self.render(&margins),
            sizes: self.sizes,
            margins,
            features: self.features,
        }
    }

    /// The first read outside an input without a boundary condition on small probe shapes:
    /// one the default schedule's bounds inference finds (it covers both sides of a `select`),
    /// else one the reference evaluator makes.
    fn out_of_bounds(&self, text: &str, margins: &[i64], seed: u64) -> Option<OutOfBounds> {
        let pipeline = parse_kernel(text, "generated").ok()?;
        let lowered = lower(&pipeline, &Schedule::new()).ok();
        for extra in [1, 2, 5] {
            let sizes: Sizes = self
                .sizes
                .iter()
                .zip(margins)
                .map(|(s, m)| (s.clone(), m + extra))
                .collect();
            let inferred = lowered
                .as_ref()
                .and_then(|l| self.outside_region(l, &sizes));
            if inferred.is_some() {
                return inferred;
            }
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let args = random_args(&pipeline, &sizes, &mut rng).ok()?;
            if let Err(EvalError::OutOfBounds {
                input,
                index,
                shape,
            }) = evaluate(&pipeline, &args)
            {
                let position = self.inputs.iter().position(|i| i.name == input)?;
                let dim = index
                    .iter()
                    .zip(&shape)
                    .position(|(&i, &s)| i < 0 || i >= s as i64)?;
                let over = if index[dim] < 0 {
                    index[dim]
                } else {
                    index[dim] - shape[dim] as i64 + 1
                };
                return Some(OutOfBounds {
                    input: position,
                    dim,
                    over,
                });
            }
        }
        None
    }

    /// The first input without a boundary condition that `lowered` reads outside of, with
    /// `sizes`.
    fn outside_region(&self, lowered: &LoweredKernel, sizes: &Sizes) -> Option<OutOfBounds> {
        let vars: HashMap<String, VValue> = sizes
            .iter()
            .map(|(n, &v)| (n.clone(), VValue::scalar(Value::I32(v as i32))))
            .collect();
        let value = |e| eval_expr(e, &vars).ok()?.as_scalar()?.as_i64();
        for (name, region) in &lowered.input_regions {
            let position = self.inputs.iter().position(|i| &i.name == name)?;
            let input = &self.inputs[position];
            if input.boundary.is_some() {
                continue;
            }
            for (dim, range) in region.iter().enumerate() {
                let extent = match input.table {
                    Some(n) => n as i64,
                    None => *sizes.get(&self.sizes[dim])?,
                };
                let (min, len) = (value(&range.min)?, value(&range.extent)?);
                let over = if len <= 0 {
                    continue;
                } else if min < 0 {
                    min
                } else if min + len > extent {
                    min + len - extent
                } else {
                    continue;
                };
                return Some(OutOfBounds {
                    input: position,
                    dim,
                    over,
                });
            }
        }
        None
    }
}
