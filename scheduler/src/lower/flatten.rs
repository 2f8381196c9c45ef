//! Storage flattening: turns multi-dimensional `Realize` / `Provide` / `Call` into flat
//! `Allocate` / `Store` / `Load`. Every buffer is row-major in its storage order (the
//! definition's order of dimensions unless `reorder_storage` changed it; inputs and the output
//! always), the last dimension of that order contiguous: with the dimensions taken in storage
//! order `o_0, .., o_n`, element `i` of a buffer with mins `m` and extents `e` is at
//! `sum((i_{o_k} - m_{o_k}) * stride_k)`, `stride_n = 1`, `stride_k = stride_{k+1} * e_{o_{k+1}}`.
//! Inputs and the output have mins 0.
//! Establishes: no `Realize`, `Provide` or `Call` remains.

use super::loop_nest::{extent_expr, Converter};
use crate::ir::{Expr, Stmt};
use crate::schedule::validate::Plan;
use std::collections::HashMap;
use strata_dsl::ir::{InputKind, Pipeline};

/// Where a buffer's elements lie: per dimension (in the definition's order) its min and
/// extent, and the order of the dimensions in memory, outermost first.
#[derive(Clone)]
struct Layout {
    mins: Vec<Expr>,
    extents: Vec<Expr>,
    order: Vec<usize>,
}

impl Layout {
    /// A buffer at `0..extents`, row-major in the order of its dimensions.
    fn row_major(extents: Vec<Expr>) -> Layout {
        Layout {
            mins: vec![Expr::int(0); extents.len()],
            order: (0..extents.len()).collect(),
            extents,
        }
    }
}

/// The layout of each buffer by name.
type Layouts = HashMap<String, Layout>;

/// Flattens `s`, whose inputs and output are those of `pipeline`; each realized function is
/// laid out in the storage order `plan` gives it.
pub fn flatten(s: &Stmt, pipeline: &Pipeline, plan: &Plan) -> Stmt {
    let mut layouts = Layouts::new();
    for input in &pipeline.inputs {
        if let InputKind::Buffer { shape, .. } = &input.kind {
            let extents: Vec<Expr> = shape.iter().map(extent_expr).collect();
            layouts.insert(input.name.clone(), Layout::row_major(extents));
        }
    }
    if let Some(output) = pipeline.output_func() {
        let conv = Converter {
            pipeline,
            func: &output.name,
            stage: 0,
        };
        let extents: Vec<Expr> = pipeline
            .output
            .extents
            .iter()
            .map(|e| conv.expr(e))
            .collect();
        layouts.insert(output.name.clone(), Layout::row_major(extents));
    }
    flatten_stmt(s, &layouts, plan)
}

fn buffer_var(func: &str, what: &str, dim: usize) -> String {
    format!("{func}.buffer.{what}.{dim}")
}

fn flatten_stmt(s: &Stmt, layouts: &Layouts, plan: &Plan) -> Stmt {
    match s {
        Stmt::Realize {
            func,
            dtype,
            region,
            body,
        } => {
            let dims = region.len();
            let mins: Vec<Expr> = (0..dims)
                .map(|d| Expr::var(buffer_var(func, "min", d)))
                .collect();
            let extents: Vec<Expr> = (0..dims)
                .map(|d| Expr::var(buffer_var(func, "extent", d)))
                .collect();
            let order = (plan.funcs.get(func))
                .map(|p| p.storage_order.clone())
                .filter(|o| o.len() == dims)
                .unwrap_or_else(|| (0..dims).collect());
            let mut inner = layouts.clone();
            let layout = Layout {
                mins,
                extents: extents.clone(),
                order,
            };
            inner.insert(func.clone(), layout);
            let body = flatten_stmt(body, &inner, plan);
            let size = extents
                .iter()
                .map(|e| Expr::max(e.clone(), Expr::int(0)))
                .reduce(Expr::mul)
                .unwrap_or(Expr::int(1));
            let mut stmt = Stmt::Allocate {
                buffer: func.clone(),
                dtype: *dtype,
                size,
                body: Box::new(body),
            };
            for (d, range) in region.iter().enumerate().rev() {
                let extent = flatten_expr(&range.extent, layouts);
                stmt = Stmt::Let {
                    name: buffer_var(func, "extent", d),
                    value: extent,
                    body: Box::new(stmt),
                };
                let min = flatten_expr(&range.min, layouts);
                stmt = Stmt::Let {
                    name: buffer_var(func, "min", d),
                    value: min,
                    body: Box::new(stmt),
                };
            }
            stmt
        }
        Stmt::Provide { func, args, value } => Stmt::Store {
            buffer: func.clone(),
            index: flat_index(func, args, layouts),
            value: flatten_expr(value, layouts),
        },
        other => other.map(&mut |e| flatten_expr(e, layouts), &mut |c| {
            flatten_stmt(c, layouts, plan)
        }),
    }
}

fn flatten_expr(e: &Expr, layouts: &Layouts) -> Expr {
    match e {
        Expr::Call { func, args, ty } => Expr::Load {
            buffer: func.clone(),
            index: Box::new(flat_index(func, args, layouts)),
            ty: *ty,
        },
        other => other.map_children(&mut |c| flatten_expr(c, layouts)),
    }
}

/// `sum((arg_d - min_d) * stride_d)` for the buffer's layout, the dimensions taken in its
/// storage order.
fn flat_index(func: &str, args: &[Expr], layouts: &Layouts) -> Expr {
    let args: Vec<Expr> = args.iter().map(|a| flatten_expr(a, layouts)).collect();
    let Some(layout) = layouts.get(func) else {
        return args.into_iter().next().unwrap_or(Expr::int(0));
    };
    let mut index: Option<Expr> = None;
    for &d in &layout.order {
        let (Some(arg), Some(min), Some(extent)) =
            (args.get(d), layout.mins.get(d), layout.extents.get(d))
        else {
            continue;
        };
        let offset = if min.as_int() == Some(0) {
            arg.clone()
        } else {
            Expr::sub(arg.clone(), min.clone())
        };
        index = Some(match index {
            None => offset,
            Some(outer) => Expr::add(Expr::mul(outer, extent.clone()), offset),
        });
    }
    index.unwrap_or(Expr::int(0))
}
