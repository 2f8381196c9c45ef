//! Storage flattening: turns multi-dimensional `Realize` / `Provide` / `Call` into flat
//! `Allocate` / `Store` / `Load`. Every buffer is row-major (last index contiguous): element
//! `(i0, .., in)` of a buffer with mins `m` and extents `e` is at `sum((i_d - m_d) * stride_d)`,
//! `stride_n = 1`, `stride_d = stride_{d+1} * e_{d+1}`. Inputs and the output have mins 0.
//! Establishes: no `Realize`, `Provide` or `Call` remains.

use super::loop_nest::{extent_expr, Converter};
use crate::ir::{Expr, Stmt};
use std::collections::HashMap;
use strata_dsl::ir::{InputKind, Pipeline};

/// The mins and extents of each buffer by name.
type Layouts = HashMap<String, (Vec<Expr>, Vec<Expr>)>;

/// Flattens `s`, whose inputs and output are those of `pipeline`.
pub fn flatten(s: &Stmt, pipeline: &Pipeline) -> Stmt {
    let mut layouts = Layouts::new();
    for input in &pipeline.inputs {
        if let InputKind::Buffer { shape, .. } = &input.kind {
            let extents: Vec<Expr> = shape.iter().map(extent_expr).collect();
            layouts.insert(
                input.name.clone(),
                (vec![Expr::int(0); extents.len()], extents),
            );
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
        layouts.insert(
            output.name.clone(),
            (vec![Expr::int(0); extents.len()], extents),
        );
    }
    flatten_stmt(s, &layouts)
}

fn buffer_var(func: &str, what: &str, dim: usize) -> String {
    format!("{func}.buffer.{what}.{dim}")
}

fn flatten_stmt(s: &Stmt, layouts: &Layouts) -> Stmt {
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
            let mut inner = layouts.clone();
            inner.insert(func.clone(), (mins, extents.clone()));
            let body = flatten_stmt(body, &inner);
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
            flatten_stmt(c, layouts)
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

/// `sum((arg_d - min_d) * stride_d)` for the buffer's layout.
fn flat_index(func: &str, args: &[Expr], layouts: &Layouts) -> Expr {
    let args: Vec<Expr> = args.iter().map(|a| flatten_expr(a, layouts)).collect();
    let Some((mins, extents)) = layouts.get(func) else {
        return args.into_iter().next().unwrap_or(Expr::int(0));
    };
    let mut index: Option<Expr> = None;
    for ((arg, min), extent) in args.iter().zip(mins).zip(extents) {
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
