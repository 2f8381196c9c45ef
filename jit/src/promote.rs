//! Register promotion, the analysis every backend shares: in a serial loop, a buffer whose
//! every access uses an index that does not change across the loop (an accumulator tile:
//! `C[ramp(i * 64 + j, 1, 8)] += ...` inside the `k` loop) is read into registers before the
//! loop, used and updated there, and written back after it. How is the backend's part
//! (`cranelift/stmt.rs`: Cranelift variables; `llvm/promote.rs`: stack slots LLVM's SROA makes
//! registers); which locations, and whether an access is one of them, is decided here once.
//! Neither code generator promotes such a tile itself, and without this no register-blocked
//! kernel comes near the peak (docs/design.md §5).
//!
//! A buffer qualifies when, inside the loop, every access to it is unconditional (not under an
//! `if`), has an index that is a scalar or a dense ramp, is invariant in the loop (after
//! substituting lets), and any two different indices provably cover disjoint elements (their
//! difference is a constant at least the accesses' width). Loops containing a parallel loop or
//! an allocation are left alone.

use std::collections::BTreeMap;
use strata_dsl::BinOp;
use strata_scheduler::ir::UnOp;
use strata_scheduler::{Expr, ForKind, Stmt, Type as IrType};

/// One promoted location: a buffer and an index (lets substituted).
#[derive(Clone, Debug, PartialEq)]
pub struct Location {
    pub buffer: String,
    pub index: Expr,
    /// The type of the accessed value (its lanes are the index's).
    pub ty: IrType,
    /// Whether the loop stores to the buffer (then the value is written back after it).
    pub stored: bool,
}

/// What holds `buffer[index]` (lets substituted with `lets`) among the `promoted` locations, if
/// that location is promoted: the backends keep promoted values in their own kind of place.
pub fn find<'a, T>(
    promoted: &'a [(Location, T)],
    buffer: &str,
    index: &Expr,
    lets: &[(String, Expr)],
) -> Option<&'a T> {
    if !promoted.iter().any(|(l, _)| l.buffer == buffer) {
        return None;
    }
    let index = expand(index, lets);
    promoted
        .iter()
        .find(|(l, _)| l.buffer == buffer && l.index == index)
        .map(|(_, held)| held)
}

/// The locations of `body` that can live in registers across the loop over `var`.
pub fn promotable(var: &str, body: &Stmt, outer_lets: &[(String, Expr)]) -> Vec<Location> {
    if contains_parallel_or_allocation(body) {
        return Vec::new();
    }
    let mut scan = Scan {
        lets: outer_lets.to_vec(),
        inner_loops: vec![var.to_string()],
        accesses: Vec::new(),
        conditional: 0,
    };
    scan.stmt(body);
    let mut by_buffer: BTreeMap<String, Vec<Access>> = BTreeMap::new();
    for a in scan.accesses {
        by_buffer
            .entry(a.location.buffer.clone())
            .or_default()
            .push(a);
    }
    let mut out = Vec::new();
    for accesses in by_buffer.values() {
        if let Some(locations) = promotable_buffer(accesses) {
            out.extend(locations);
        }
    }
    out
}

/// Every buffer access in `body` as its index (lets substituted) and the accessed type.
pub fn accesses(body: &Stmt, outer_lets: &[(String, Expr)]) -> Vec<(Expr, IrType)> {
    let mut scan = Scan {
        lets: outer_lets.to_vec(),
        inner_loops: Vec::new(),
        accesses: Vec::new(),
        conditional: 0,
    };
    scan.stmt(body);
    scan.accesses
        .into_iter()
        .map(|a| (a.location.index, a.location.ty))
        .collect()
}

struct Access {
    location: Location,
    ok: bool,
    store: bool,
}

/// The distinct locations of one buffer, if every access qualifies and they are disjoint.
fn promotable_buffer(accesses: &[Access]) -> Option<Vec<Location>> {
    if accesses.iter().any(|a| !a.ok) {
        return None;
    }
    let stored = accesses.iter().any(|a| a.store);
    let mut distinct: Vec<Location> = Vec::new();
    for a in accesses {
        if distinct.iter().any(|d| d.index == a.location.index) {
            continue;
        }
        if distinct.iter().any(|d| !disjoint(d, &a.location)) {
            return None;
        }
        distinct.push(Location {
            stored,
            ..a.location.clone()
        });
    }
    Some(distinct)
}

fn disjoint(a: &Location, b: &Location) -> bool {
    let span = a.ty.lanes.max(b.ty.lanes) as i64;
    match difference(start(&a.index), start(&b.index)) {
        Some(d) => d.abs() >= span,
        None => false,
    }
}

/// The first element an index touches.
fn start(index: &Expr) -> &Expr {
    match index {
        Expr::Ramp { base, .. } => base,
        other => other,
    }
}

/// `a - b` when it is a constant: both as sums of atoms times constants.
pub fn difference(a: &Expr, b: &Expr) -> Option<i64> {
    let (mut terms, c1) = linear(a)?;
    let (other, c2) = linear(b)?;
    for (atom, k) in other {
        *terms.entry(atom).or_insert(0) -= k;
    }
    terms.values().all(|&k| k == 0).then_some(c1 - c2)
}

/// `e` as `sum(k_i * atom_i) + c`, atoms named by their printed form.
fn linear(e: &Expr) -> Option<(BTreeMap<String, i64>, i64)> {
    if let Some(c) = e.as_int() {
        return Some((BTreeMap::new(), c));
    }
    let combine = |a: (BTreeMap<String, i64>, i64), b: (BTreeMap<String, i64>, i64), sign: i64| {
        let (mut terms, c) = a;
        for (atom, k) in b.0 {
            *terms.entry(atom).or_insert(0) += sign * k;
        }
        (terms, c + sign * b.1)
    };
    match e {
        Expr::Binary(BinOp::Add, x, y) => Some(combine(linear(x)?, linear(y)?, 1)),
        Expr::Binary(BinOp::Sub, x, y) => Some(combine(linear(x)?, linear(y)?, -1)),
        Expr::Binary(BinOp::Mul, x, y) if y.as_int().is_some() || x.as_int().is_some() => {
            let (k, other) = match y.as_int() {
                Some(k) => (k, x),
                None => (x.as_int().unwrap_or(1), y),
            };
            let (terms, c) = linear(other)?;
            Some((terms.into_iter().map(|(a, v)| (a, v * k)).collect(), c * k))
        }
        Expr::Unary(UnOp::Neg, x) => {
            let (terms, c) = linear(x)?;
            Some((terms.into_iter().map(|(a, v)| (a, -v)).collect(), -c))
        }
        other => Some((BTreeMap::from([(other.to_string(), 1)]), 0)),
    }
}

fn contains_parallel_or_allocation(s: &Stmt) -> bool {
    let mut found = false;
    s.for_each(&mut |x| {
        found |= matches!(
            x,
            Stmt::For {
                kind: ForKind::Parallel,
                ..
            } | Stmt::Allocate { .. }
        );
    });
    found
}

/// The most nodes a let's value keeps once the lets it reads are substituted. Lets written in
/// terms of one another, as the regions of a pyramid's levels are (each level's bounds read the
/// level above's twice), double per level when substituted: a 10-level interpolation's took
/// more than 7 GB to compile (issue 20). Past this size a let stands for itself, a symbol like
/// any variable; see `Scan::bind` for what keeps that sound.
const MAX_EXPANDED_NODES: usize = 256;

/// The entry for `name` in a list of expanded lets: `expanded`, its value with the lets it
/// reads substituted, or the variable itself when that is larger than `MAX_EXPANDED_NODES`.
pub fn let_entry(name: &str, expanded: Expr) -> (String, Expr) {
    let value = if is_large(&expanded) {
        Expr::Var(name.to_string(), expanded.ty())
    } else {
        expanded
    };
    (name.to_string(), value)
}

fn is_large(e: &Expr) -> bool {
    let mut nodes = 0;
    e.for_each(&mut |_| nodes += 1);
    nodes > MAX_EXPANDED_NODES
}

/// `e` with the lets of `lets` (innermost last, each already expanded) substituted.
pub fn expand(e: &Expr, lets: &[(String, Expr)]) -> Expr {
    Scan {
        lets: lets.to_vec(),
        inner_loops: Vec::new(),
        accesses: Vec::new(),
        conditional: 0,
    }
    .expand(e)
}

/// Walks a loop body collecting accesses, with lets substituted.
struct Scan {
    lets: Vec<(String, Expr)>,
    /// The promoted loop's variable and every loop variable bound inside it.
    inner_loops: Vec<String>,
    accesses: Vec<Access>,
    /// How many `if`s enclose the current statement.
    conditional: usize,
}

impl Scan {
    fn expand(&self, e: &Expr) -> Expr {
        match e {
            Expr::Var(name, _) => match self.lets.iter().rev().find(|(n, _)| n == name) {
                Some((_, value)) => value.clone(),
                None => e.clone(),
            },
            Expr::Let { name, value, body } => {
                let value = self.expand(value);
                let entry = let_entry(name, value.clone());
                let kept = entry.1 != value;
                let inner = Scan {
                    lets: [self.lets.clone(), vec![entry]].concat(),
                    inner_loops: Vec::new(),
                    accesses: Vec::new(),
                    conditional: 0,
                };
                let body = inner.expand(body);
                // A let kept as its name stays a let, so what its value reads still shows.
                match kept {
                    true => Expr::Let {
                        name: name.clone(),
                        value: Box::new(value),
                        body: Box::new(body),
                    },
                    false => body,
                }
            }
            other => other.map_children(&mut |c| self.expand(c)),
        }
    }

    /// `walk` with the let `name = value` in scope. A let kept as its name (`let_entry`) whose
    /// value reads a loop variable bound inside the scanned loop counts as such a variable
    /// itself, so an index reading it is not taken as invariant in the loop.
    fn bind(&mut self, name: &str, value: &Expr, walk: &mut dyn FnMut(&mut Scan)) {
        let expanded = self.expand(value);
        let varies = self.inner_loops.iter().any(|v| expanded.uses_var(v));
        let entry = let_entry(name, expanded);
        let varying_name = varies && entry.1 == Expr::Var(name.to_string(), value.ty());
        self.lets.push(entry);
        if varying_name {
            self.inner_loops.push(name.to_string());
        }
        walk(self);
        if varying_name {
            self.inner_loops.pop();
        }
        self.lets.pop();
    }

    fn note(&mut self, buffer: &str, index: &Expr, ty: IrType, store: bool) {
        let index = self.expand(index);
        let dense = match &index {
            Expr::Ramp { stride, .. } => stride.as_int() == Some(1),
            other => !other.ty().is_vector(),
        };
        let invariant = self.inner_loops.iter().all(|v| !index.uses_var(v));
        let ok = dense && invariant && self.conditional == 0;
        let ty = ty.with_lanes(index.ty().lanes);
        let location = Location {
            buffer: buffer.to_string(),
            index,
            ty,
            stored: store,
        };
        self.accesses.push(Access {
            location,
            ok,
            store,
        });
    }

    fn expr(&mut self, e: &Expr) {
        match e {
            Expr::Load { buffer, index, ty } => {
                self.note(buffer, index, *ty, false);
                self.expr(index);
            }
            Expr::Let { name, value, body } => {
                self.expr(value);
                self.bind(name, value, &mut |scan| scan.expr(body));
            }
            other => other.children().into_iter().for_each(|c| self.expr(c)),
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        for e in s.exprs() {
            self.expr(e);
        }
        match s {
            Stmt::Store {
                buffer,
                index,
                value,
            } => self.note(buffer, index, value.ty(), true),
            Stmt::Let { name, value, body } => {
                self.bind(name, value, &mut |scan| scan.stmt(body));
            }
            Stmt::For { var, body, .. } => {
                self.inner_loops.push(var.clone());
                self.stmt(body);
                self.inner_loops.pop();
            }
            Stmt::If {
                then_case,
                else_case,
                ..
            } => {
                self.conditional += 1;
                self.stmt(then_case);
                if let Some(e) = else_case {
                    self.stmt(e);
                }
                self.conditional -= 1;
            }
            other => other.children().into_iter().for_each(|c| self.stmt(c)),
        }
    }
}
