//! The type checker: resolves every name of a parsed kernel, gives every expression its type
//! (see `dtype` for the promotion rules) and builds the `Pipeline`. Each rule a kernel can break
//! has its own message, located at the offending text.

use crate::ast::*;
use crate::diagnostic::{Diagnostic, Span};
use crate::dtype::Dtype;
use crate::ir::*;
use crate::signature::{SizeExpr, Sizes};
use crate::value::{BinOp, Value};
use std::collections::{BTreeMap, HashMap, HashSet};

type CResult<T> = Result<T, Diagnostic>;

fn err<T>(message: impl Into<String>, span: Span) -> CResult<T> {
    Err(Diagnostic::new(message, span))
}

/// Checks one parsed kernel and builds its Pipeline.
pub fn check_kernel(ast: &KernelAst) -> CResult<Pipeline> {
    let mut names = Names::default();
    let inputs = declare_inputs(ast, &mut names)?;
    names.rvar_names = collect_rvar_names(ast);
    names.pure_var_names = collect_pure_var_names(ast);
    let output = check_output(ast, &names)?;
    let defs = group_definitions(ast, &names)?;
    for def in &defs {
        names.funcs.insert(def.name.clone(), def.signature());
    }
    let order = callees_first(&defs, &names)?;
    let mut funcs = BTreeMap::new();
    for index in order {
        let func = check_function(&defs[index], ast, &mut names)?;
        funcs.insert(index, func);
    }
    Ok(Pipeline {
        name: ast.name.name.clone(),
        inputs,
        output,
        funcs: funcs.into_values().collect(),
    })
}

/// Checks a condition over `pipeline`'s sizes and scalar parameters (a schedule's
/// `specialize(cond)`, decided once per call): a bool expression of sizes, scalar parameters
/// and constants, reading no input buffer or function and holding no reduction.
pub fn check_condition(pipeline: &Pipeline, ast: &ExprAst) -> CResult<Expr> {
    let mut names = Names {
        sizes: pipeline.size_vars(),
        ..Names::default()
    };
    for input in &pipeline.inputs {
        if matches!(input.kind, InputKind::Scalar) {
            let info = InputInfo {
                dtype: input.dtype,
                rank: None,
            };
            names.inputs.insert(input.name.clone(), info);
        }
    }
    refuse_reads_in_condition(pipeline, ast)?;
    let checked = ExprChecker::new(&names).expr(ast, Some(Dtype::Bool))?;
    if checked.dtype() != Dtype::Bool {
        let found = checked.dtype();
        return err(
            format!("a condition must be a bool, found {found}"),
            ast.span,
        );
    }
    Ok(checked)
}

/// A condition is decided before any loop runs, so it reads no data.
fn refuse_reads_in_condition(pipeline: &Pipeline, e: &ExprAst) -> CResult<()> {
    let what = "a condition may use only sizes, scalar parameters and constants";
    match &e.kind {
        ExprAstKind::Call(callee, args) => {
            let name = &callee.name;
            let is_buffer = pipeline
                .inputs
                .iter()
                .any(|i| &i.name == name && matches!(i.kind, InputKind::Buffer { .. }));
            if is_buffer || pipeline.func(name).is_some() {
                return err(format!("`{name}` reads data: {what}"), e.span);
            }
            args.iter()
                .try_for_each(|a| refuse_reads_in_condition(pipeline, a))
        }
        ExprAstKind::Reduce(..) => err(format!("a reduction: {what}"), e.span),
        ExprAstKind::Neg(a) | ExprAstKind::Not(a) => refuse_reads_in_condition(pipeline, a),
        ExprAstKind::Binary(_, a, b) => {
            refuse_reads_in_condition(pipeline, a)?;
            refuse_reads_in_condition(pipeline, b)
        }
        _ => Ok(()),
    }
}

/// Every name the kernel declares, as far as checking has got.
#[derive(Default)]
struct Names {
    inputs: BTreeMap<String, InputInfo>,
    sizes: Vec<String>,
    funcs: BTreeMap<String, FuncSig>,
    /// Every reduction variable declared anywhere, to explain a use outside its scope.
    rvar_names: HashSet<String>,
    /// Every name a definition uses as a plain argument (a pure variable somewhere), to say so
    /// when one is used where only sizes are allowed.
    pure_var_names: HashSet<String>,
}

struct InputInfo {
    dtype: Dtype,
    /// `None` for a scalar parameter.
    rank: Option<usize>,
}

#[derive(Clone)]
struct FuncSig {
    vars: Vec<String>,
    /// Known once the function's pure definition has been checked.
    dtype: Option<Dtype>,
}

impl Names {
    /// What `name` already is, if anything, for "already used" messages.
    fn kind_of(&self, name: &str) -> Option<&'static str> {
        if let Some(input) = self.inputs.get(name) {
            return Some(if input.rank.is_some() {
                "an input"
            } else {
                "a scalar parameter"
            });
        }
        if self.sizes.iter().any(|s| s == name) {
            return Some("a size variable");
        }
        if self.funcs.contains_key(name) {
            return Some("a function");
        }
        None
    }
}

fn check_fresh_name(name: &Ident, what: &str, names: &Names) -> CResult<()> {
    if is_reserved(&name.name) {
        return err(
            format!("`{}` is a built-in name and cannot name {what}", name.name),
            name.span,
        );
    }
    if let Some(kind) = names.kind_of(&name.name) {
        return err(
            format!(
                "`{}` is already {kind}; choose another name for {what}",
                name.name
            ),
            name.span,
        );
    }
    Ok(())
}

fn declare_inputs(ast: &KernelAst, names: &mut Names) -> CResult<Vec<Input>> {
    let mut inputs = Vec::new();
    for param in &ast.params {
        check_fresh_name(&param.name, "an input", names)?;
        let kind = match &param.shape {
            None => InputKind::Scalar,
            Some(extents) => {
                let shape = extents
                    .iter()
                    .map(|e| declare_extent(e, names))
                    .collect::<CResult<Vec<_>>>()?;
                let boundary = match &param.boundary {
                    None => None,
                    Some((b, _)) => Some(check_boundary(b, param.dtype)?),
                };
                InputKind::Buffer { shape, boundary }
            }
        };
        let rank = param.shape.as_ref().map(Vec::len);
        let info = InputInfo {
            dtype: param.dtype,
            rank,
        };
        names.inputs.insert(param.name.name.clone(), info);
        inputs.push(Input {
            name: param.name.name.clone(),
            dtype: param.dtype,
            kind,
        });
    }
    Ok(inputs)
}

/// An input's extent: a size variable (declared by its first use) or an integer constant.
fn declare_extent(e: &ExprAst, names: &mut Names) -> CResult<Extent> {
    match &e.kind {
        ExprAstKind::Name(name) => {
            let ident = Ident {
                name: name.clone(),
                span: e.span,
            };
            if !names.sizes.contains(name) {
                check_fresh_name(&ident, "a size", names)?;
                names.sizes.push(name.clone());
            }
            Ok(Extent::Size(name.clone()))
        }
        ExprAstKind::Int(v, None | Some(Dtype::I32)) if *v <= i32::MAX as u128 => {
            Ok(Extent::Const(*v as i64))
        }
        _ => err(
            "an input's extent must be a size variable or an integer constant (output extents may be expressions)",
            e.span,
        ),
    }
}

fn check_boundary(b: &BoundaryAst, dtype: Dtype) -> CResult<Boundary> {
    match b {
        BoundaryAst::Known(known) => Ok(known.clone()),
        BoundaryAst::Constant(e) => {
            let value = literal_value(e, Some(dtype))?.ok_or_else(|| {
                Diagnostic::new(
                    "a constant boundary condition takes a literal value",
                    e.span,
                )
            })?;
            if value.dtype() != dtype {
                return err(
                    format!(
                        "type mismatch: the boundary value is {} but the input is {dtype}",
                        value.dtype()
                    ),
                    e.span,
                );
            }
            Ok(Boundary::Constant(value))
        }
    }
}

fn check_output(ast: &KernelAst, names: &Names) -> CResult<Output> {
    let out = &ast.output;
    if names.kind_of(&out.name.name).is_some() || is_reserved(&out.name.name) {
        check_fresh_name(&out.name, "the output", names)?;
    }
    let extents = out
        .extents
        .iter()
        .map(|e| ExprChecker::sizes_only(names, "an output extent").int_expr(e))
        .collect::<CResult<Vec<_>>>()?;
    Ok(Output {
        name: out.name.name.clone(),
        dtype: out.dtype,
        extents,
    })
}

fn collect_rvar_names(ast: &KernelAst) -> HashSet<String> {
    fn walk(e: &ExprAst, out: &mut HashSet<String>) {
        match &e.kind {
            ExprAstKind::Reduce(_, rvars, _, body) => {
                out.extend(rvars.iter().map(|r| r.name.name.clone()));
                walk(body, out);
            }
            ExprAstKind::Call(_, args) => args.iter().for_each(|a| walk(a, out)),
            ExprAstKind::Neg(a) | ExprAstKind::Not(a) => walk(a, out),
            ExprAstKind::Binary(_, a, b) => {
                walk(a, out);
                walk(b, out);
            }
            _ => {}
        }
    }
    let mut out = HashSet::new();
    for stmt in &ast.stmts {
        out.extend(stmt.rvars.iter().map(|r| r.name.name.clone()));
        stmt.args.iter().for_each(|a| walk(a, &mut out));
        walk(&stmt.value, &mut out);
    }
    out
}

fn collect_pure_var_names(ast: &KernelAst) -> HashSet<String> {
    let plain = |a: &ExprAst| match &a.kind {
        ExprAstKind::Name(n) => Some(n.clone()),
        _ => None,
    };
    ast.stmts
        .iter()
        .flat_map(|s| s.args.iter().filter_map(plain))
        .collect()
}

/// A function's statements: the pure definition first, then its updates.
struct Definition<'a> {
    name: String,
    vars: Vec<String>,
    pure: &'a StmtAst,
    updates: Vec<&'a StmtAst>,
}

impl Definition<'_> {
    fn signature(&self) -> FuncSig {
        FuncSig {
            vars: self.vars.clone(),
            dtype: None,
        }
    }

    fn statements(&self) -> impl Iterator<Item = &StmtAst> {
        std::iter::once(self.pure).chain(self.updates.iter().copied())
    }
}

fn group_definitions<'a>(ast: &'a KernelAst, names: &Names) -> CResult<Vec<Definition<'a>>> {
    let mut defs: Vec<Definition<'a>> = Vec::new();
    // Found by name in constant time: a kernel may define many thousands of functions.
    let mut index_of: HashMap<&str, usize> = HashMap::new();
    for stmt in &ast.stmts {
        match index_of.get(stmt.target.name.as_str()) {
            Some(&index) => {
                check_update_shape(stmt, &defs[index])?;
                defs[index].updates.push(stmt);
            }
            None => {
                let is_output = stmt.target.name == ast.output.name.name;
                if !is_output {
                    check_fresh_name(&stmt.target, "a function", names)?;
                }
                index_of.insert(&stmt.target.name, defs.len());
                defs.push(pure_definition(stmt)?);
            }
        }
    }
    let out = &ast.output;
    let Some(output_def) = defs.iter().find(|d| d.name == out.name.name) else {
        return err(
            format!("the output `{}` is never defined", out.name.name),
            out.name.span,
        );
    };
    if output_def.vars.len() != out.extents.len() {
        return err(
            format!(
                "the output `{}` is declared with {} dimensions but defined with {} variables",
                out.name.name,
                out.extents.len(),
                output_def.vars.len()
            ),
            output_def.pure.target.span.to(output_def.pure.op_span),
        );
    }
    Ok(defs)
}

/// The first statement of a function must be `f(x, y, ...) = value` with distinct variables.
fn pure_definition(stmt: &StmtAst) -> CResult<Definition<'_>> {
    let name = &stmt.target.name;
    if stmt.op != UpdateOp::Assign || !stmt.rvars.is_empty() {
        return err(
            format!("update of `{name}` before its pure definition: define `{name}(x, ...) = ...` first"),
            stmt.target.span,
        );
    }
    let mut vars: Vec<String> = Vec::new();
    for arg in &stmt.args {
        let ExprAstKind::Name(var) = &arg.kind else {
            return err(
                format!("the pure definition of `{name}` must have plain variables as arguments"),
                arg.span,
            );
        };
        if vars.contains(var) {
            return err(
                format!("variable `{var}` appears twice in the definition of `{name}`"),
                arg.span,
            );
        }
        if is_reserved(var) {
            return err(
                format!("`{var}` is a built-in name and cannot be a variable"),
                arg.span,
            );
        }
        vars.push(var.clone());
    }
    Ok(Definition {
        name: name.clone(),
        vars,
        pure: stmt,
        updates: Vec::new(),
    })
}

/// A later statement of a function is an update: same arity, and not a second pure definition.
fn check_update_shape(stmt: &StmtAst, def: &Definition) -> CResult<()> {
    let name = &def.name;
    if stmt.args.len() != def.vars.len() {
        return err(
            format!(
                "`{name}` has {} arguments but this update gives {}",
                def.vars.len(),
                stmt.args.len()
            ),
            stmt.target.span,
        );
    }
    let same_vars = stmt
        .args
        .iter()
        .zip(&def.vars)
        .all(|(a, v)| matches!(&a.kind, ExprAstKind::Name(n) if n == v));
    let is_plain_redefinition = stmt.op == UpdateOp::Assign
        && stmt.rvars.is_empty()
        && same_vars
        && !reads(&stmt.value, name);
    if is_plain_redefinition {
        return err(
            format!(
                "function `{name}` is defined twice (an update must read `{name}` or use `+=`, `*=`, `-=` or `for`)"
            ),
            stmt.target.span,
        );
    }
    Ok(())
}

/// Whether `e` calls `name`.
fn reads(e: &ExprAst, name: &str) -> bool {
    match &e.kind {
        ExprAstKind::Call(callee, args) => {
            callee.name == name || args.iter().any(|a| reads(a, name))
        }
        ExprAstKind::Neg(a) | ExprAstKind::Not(a) => reads(a, name),
        ExprAstKind::Binary(_, a, b) => reads(a, name) || reads(b, name),
        ExprAstKind::Reduce(_, rvars, predicate, body) => {
            reads(body, name)
                || predicate.as_ref().is_some_and(|p| reads(p, name))
                || rvars
                    .iter()
                    .any(|r| reads(&r.lo, name) || reads(&r.hi, name))
        }
        _ => false,
    }
}

/// Calls from `e` to functions, with the span of each call's name.
fn calls_in(e: &ExprAst, names: &Names, out: &mut Vec<(String, Span)>) {
    match &e.kind {
        ExprAstKind::Call(callee, args) => {
            if names.funcs.contains_key(&callee.name) {
                out.push((callee.name.clone(), callee.span));
            }
            args.iter().for_each(|a| calls_in(a, names, out));
        }
        ExprAstKind::Neg(a) | ExprAstKind::Not(a) => calls_in(a, names, out),
        ExprAstKind::Binary(_, a, b) => {
            calls_in(a, names, out);
            calls_in(b, names, out);
        }
        ExprAstKind::Reduce(_, _, _, body) => calls_in(body, names, out),
        _ => {}
    }
}

/// Orders definitions so each function comes after every function it reads, rejecting cycles.
/// An update may read its own function; a pure definition may not.
fn callees_first(defs: &[Definition], names: &Names) -> CResult<Vec<usize>> {
    let indices: HashMap<&str, usize> = defs
        .iter()
        .enumerate()
        .map(|(i, d)| (d.name.as_str(), i))
        .collect();
    let index_of = |name: &str| indices.get(name).copied();
    let mut edges: Vec<Vec<(usize, Span)>> = Vec::new();
    for def in defs {
        let mut calls = Vec::new();
        calls_in(&def.pure.value, names, &mut calls);
        if let Some((_, span)) = calls.iter().find(|(c, _)| c == &def.name) {
            return err(
                format!(
                    "`{}` reads itself in its pure definition; a recursive definition needs an update (`{}(x) = ...; for (r in ..) {}(r) = ...`)",
                    def.name, def.name, def.name
                ),
                *span,
            );
        }
        for update in &def.updates {
            update
                .args
                .iter()
                .for_each(|a| calls_in(a, names, &mut calls));
            calls_in(&update.value, names, &mut calls);
        }
        calls.retain(|(c, _)| c != &def.name);
        edges.push(
            calls
                .into_iter()
                .filter_map(|(c, s)| index_of(&c).map(|i| (i, s)))
                .collect(),
        );
    }
    let mut state = vec![Visit::New; defs.len()];
    let mut order = Vec::new();
    for start in 0..defs.len() {
        visit(start, &edges, defs, &mut state, &mut order)?;
    }
    Ok(order)
}

#[derive(Clone, Copy, PartialEq)]
enum Visit {
    New,
    Active,
    Done,
}

/// Depth-first from `start`, appending each function after its callees to `order`. The path
/// is an explicit stack of (function, next edge to follow), not recursion: a chain of many
/// thousands of functions must not overflow the stack.
fn visit(
    start: usize,
    edges: &[Vec<(usize, Span)>],
    defs: &[Definition],
    state: &mut [Visit],
    order: &mut Vec<usize>,
) -> CResult<()> {
    if state[start] == Visit::Done {
        return Ok(());
    }
    state[start] = Visit::Active;
    let mut path: Vec<(usize, usize)> = vec![(start, 0)];
    while let Some((node, edge)) = path.last_mut() {
        let node = *node;
        let Some(&(next, span)) = edges[node].get(*edge) else {
            path.pop();
            state[node] = Visit::Done;
            order.push(node);
            continue;
        };
        *edge += 1;
        match state[next] {
            Visit::Done => {}
            Visit::Active => return Err(cycle_error(&path, next, span, defs)),
            Visit::New => {
                state[next] = Visit::Active;
                path.push((next, 0));
            }
        }
    }
    Ok(())
}

/// "cycle between functions: f -> g -> f", from where `next` is on the path back to `next`.
fn cycle_error(
    path: &[(usize, usize)],
    next: usize,
    span: Span,
    defs: &[Definition],
) -> Diagnostic {
    let start = path.iter().position(|&(n, _)| n == next).unwrap_or(0);
    let cycle: Vec<&str> = path[start..]
        .iter()
        .map(|&(n, _)| n)
        .chain(std::iter::once(next))
        .map(|n| defs[n].name.as_str())
        .collect();
    Diagnostic::new(
        format!("cycle between functions: {}", cycle.join(" -> ")),
        span,
    )
}

fn check_function(def: &Definition, ast: &KernelAst, names: &mut Names) -> CResult<Func> {
    let declared = (def.name == ast.output.name.name).then_some(ast.output.dtype);
    for (var, arg) in def.vars.iter().zip(&def.pure.args) {
        if let Some(kind) = names.kind_of(var) {
            return err(
                format!("`{var}` is already {kind}; choose another name for the variable"),
                arg.span,
            );
        }
    }
    let mut checker = ExprChecker::new(names);
    checker.pure_vars = def.vars.clone();
    let value = checker.expr(&def.pure.value, declared)?;
    let dtype = value.dtype();
    if let Some(declared) = declared.filter(|d| *d != dtype) {
        return err(
            format!(
                "type mismatch: the output `{}` is declared {declared} but its definition is {dtype}",
                def.name
            ),
            def.pure.value.span,
        );
    }
    if let Some(sig) = names.funcs.get_mut(&def.name) {
        sig.dtype = Some(dtype);
    }
    let updates = def
        .statements()
        .skip(1)
        .map(|stmt| check_update(stmt, def, dtype, names, declared.is_some()))
        .collect::<CResult<Vec<_>>>()?;
    Ok(Func {
        name: def.name.clone(),
        dtype,
        vars: def.vars.clone(),
        value,
        updates,
    })
}

fn check_update(
    stmt: &StmtAst,
    def: &Definition,
    dtype: Dtype,
    names: &Names,
    is_output: bool,
) -> CResult<Update> {
    let mut checker = ExprChecker::new(names);
    // A pure variable may be used in an update only where it stays in its own place (in the
    // domain's bounds too: the others are not loops of the update).
    for (var, arg) in def.vars.iter().zip(&stmt.args) {
        if matches!(&arg.kind, ExprAstKind::Name(n) if n == var) {
            checker.pure_vars.push(var.clone());
        }
    }
    checker.misplaced_pure = def
        .vars
        .iter()
        .filter(|v| !checker.pure_vars.contains(v))
        .map(|v| (v.clone(), def.name.clone()))
        .collect();
    let rvars = checker.declare_rvars(&stmt.rvars)?;
    let predicate = stmt
        .predicate
        .as_ref()
        .map(|p| checker.predicate(p))
        .transpose()?;
    checker.updating = Some((def.name.clone(), def.vars.clone()));
    if is_output {
        checker.output_rvar_lows = Some(
            rvars
                .iter()
                .filter_map(|r| Some((r.name.clone(), constant_of(&r.lo)?)))
                .collect(),
        );
    }
    let args = stmt
        .args
        .iter()
        .enumerate()
        .map(|(i, a)| checker.index(a, &def.name, i))
        .collect::<CResult<Vec<_>>>()?;
    checker.refuse_index_below_the_output(&def.name, &args, &stmt.args)?;
    if stmt.op != UpdateOp::Assign && !dtype.is_numeric() {
        return err(
            format!(
                "`{}` needs a numeric function, but `{}` is bool",
                stmt.op.symbol(),
                def.name
            ),
            stmt.op_span,
        );
    }
    let value = checker.expr(&stmt.value, Some(dtype))?;
    if value.dtype() != dtype {
        return err(
            format!(
                "type mismatch: `{}` is {dtype} but this update gives {}",
                def.name,
                value.dtype()
            ),
            stmt.value.span,
        );
    }
    Ok(Update {
        rvars,
        predicate,
        args,
        op: stmt.op,
        value,
    })
}

/// Checks expressions in one scope: the pure variables of the definition, the reduction
/// variables around the expression, and the kernel's names.
struct ExprChecker<'a> {
    names: &'a Names,
    pure_vars: Vec<String>,
    /// Pure variables of the function that this update may not use, with the function's name.
    misplaced_pure: Vec<(String, String)>,
    rvars: Vec<String>,
    /// `Some(what)` when only sizes and integer constants are allowed (extents, domain bounds).
    sizes_only: Option<&'static str>,
    /// In a domain bound: the variables it may also use, and the reduction variables of its
    /// own domain it may not (itself and those declared after it).
    bound_scope: Option<BoundScope>,
    /// In an update: the function updated and its pure variables, whose reads of itself must
    /// use each pure variable bare in its own position.
    updating: Option<(String, Vec<String>)>,
    /// In an update of the output: its reduction variables with a constant lower bound, to
    /// refuse an index that leaves the output whatever the sizes.
    output_rvar_lows: Option<Vec<(String, i64)>>,
}

impl<'a> ExprChecker<'a> {
    fn new(names: &'a Names) -> Self {
        ExprChecker {
            names,
            pure_vars: Vec::new(),
            misplaced_pure: Vec::new(),
            rvars: Vec::new(),
            sizes_only: None,
            bound_scope: None,
            updating: None,
            output_rvar_lows: None,
        }
    }

    fn sizes_only(names: &'a Names, what: &'static str) -> Self {
        ExprChecker {
            sizes_only: Some(what),
            ..ExprChecker::new(names)
        }
    }

    /// An integer expression of sizes and constants, as `i32`.
    fn int_expr(&mut self, e: &ExprAst) -> CResult<Expr> {
        let checked = self.expr(e, Some(Dtype::I32))?;
        if checked.dtype() != Dtype::I32 {
            return err(
                format!(
                    "{} must be an i32 expression, found {}",
                    self.sizes_only.unwrap_or("this"),
                    checked.dtype()
                ),
                e.span,
            );
        }
        Ok(checked)
    }

    /// Declares reduction variables after checking their bounds.
    fn declare_rvars(&mut self, rvars: &[RVarAst]) -> CResult<Vec<RVar>> {
        let mut declared = Vec::new();
        for rv in rvars {
            let name = &rv.name.name;
            let clash = self.pure_vars.contains(name)
                || self.rvars.contains(name)
                || self.misplaced_pure.iter().any(|(v, _)| v == name);
            if clash || declared.iter().any(|d: &RVar| &d.name == name) {
                return err(
                    format!("reduction variable `{name}` is already a variable here"),
                    rv.name.span,
                );
            }
            check_fresh_name(&rv.name, "a reduction variable", self.names)?;
            let before: Vec<String> = declared.iter().map(|d: &RVar| d.name.clone()).collect();
            let later = rvars[declared.len()..]
                .iter()
                .map(|r| r.name.name.clone())
                .collect();
            let mut bounds = ExprChecker::sizes_only(self.names, "a reduction bound");
            bounds.bound_scope = Some(BoundScope {
                pure_vars: self.pure_vars.clone(),
                rvars: self.rvars.iter().cloned().chain(before).collect(),
                later,
                misplaced_pure: self.misplaced_pure.clone(),
            });
            declared.push(RVar {
                name: name.clone(),
                lo: bounds.bound(&rv.lo)?,
                hi: bounds.bound(&rv.hi)?,
            });
        }
        self.rvars.extend(declared.iter().map(|r| r.name.clone()));
        Ok(declared)
    }

    /// A domain bound: an `i32` expression of sizes and constants, affine in the variables of
    /// `bound_scope` (bounds inference and loop synthesis follow sums of variables times
    /// constants exactly).
    fn bound(&mut self, e: &ExprAst) -> CResult<Expr> {
        let checked = self.int_expr(e)?;
        if !is_affine(&checked) {
            return err(
                format!("a reduction bound must be affine in the variables it uses (variables times integer constants, added to sizes and constants): `{checked}` is not; use a `where` predicate for other shapes"),
                e.span,
            );
        }
        Ok(checked)
    }

    /// A domain's `where` predicate, with the domain's variables in scope: a bool of
    /// variables, sizes, scalar parameters and constants.
    fn predicate(&mut self, e: &ExprAst) -> CResult<Expr> {
        let checked = self.expr(e, Some(Dtype::Bool))?;
        self.require(
            checked.dtype() == Dtype::Bool,
            "a `where` predicate must be bool",
            checked.dtype(),
            e.span,
        )?;
        let mut reads = false;
        checked.for_each(&mut |x| reads |= matches!(x, Expr::Call(_) | Expr::Reduce(_)));
        if reads {
            return err(
                "a `where` predicate may use only variables, sizes, scalar parameters and constants (no reads of functions or inputs, no reductions)",
                e.span,
            );
        }
        Ok(checked)
    }

    /// An index into a function or input: any integer type.
    fn index(&mut self, e: &ExprAst, callee: &str, position: usize) -> CResult<Expr> {
        let checked = self.expr(e, Some(Dtype::I32))?;
        if !checked.dtype().is_int() {
            return err(
                format!(
                    "index {} of `{callee}` must be an integer, found {}",
                    position + 1,
                    checked.dtype()
                ),
                e.span,
            );
        }
        Ok(checked)
    }

    fn expr(&mut self, e: &ExprAst, hint: Option<Dtype>) -> CResult<Expr> {
        if let Some(value) = literal_value(e, hint)? {
            return Ok(Expr::Const(value));
        }
        match &e.kind {
            ExprAstKind::Name(name) => self.name(name, e.span),
            ExprAstKind::Neg(a) => {
                let a = self.expr(a, hint)?;
                self.require(
                    a.dtype().is_numeric(),
                    "`-` needs a number",
                    a.dtype(),
                    e.span,
                )?;
                Ok(Expr::Neg(Box::new(a)))
            }
            ExprAstKind::Not(a) => {
                let a = self.expr(a, Some(Dtype::Bool))?;
                self.require(
                    a.dtype() == Dtype::Bool,
                    "`!` needs a bool",
                    a.dtype(),
                    e.span,
                )?;
                Ok(Expr::Not(Box::new(a)))
            }
            ExprAstKind::Binary(op, a, b) => self.binary(*op, a, b, hint, e.span),
            ExprAstKind::Call(callee, args) => self.call(callee, args, hint, e.span),
            ExprAstKind::Reduce(op, rvars, predicate, body) => {
                let domain = (rvars.as_slice(), predicate.as_deref());
                self.reduce(*op, domain, body, hint, e.span)
            }
            _ => err("internal error: unhandled literal", e.span),
        }
    }

    fn require(&self, ok: bool, what: &str, found: Dtype, span: Span) -> CResult<()> {
        if ok {
            Ok(())
        } else {
            err(format!("{what}, found {found}"), span)
        }
    }

    fn name(&self, name: &str, span: Span) -> CResult<Expr> {
        if let Some(what) = self.sizes_only {
            if self.names.sizes.iter().any(|s| s == name) {
                return Ok(Expr::Size(name.to_string()));
            }
            if let Some(scope) = &self.bound_scope {
                return scope.name(name, self.names, span);
            }
            return err(self.not_a_size(name, what), span);
        }
        if self.rvars.iter().any(|r| r == name) {
            return Ok(Expr::RVar(name.to_string()));
        }
        if self.pure_vars.iter().any(|v| v == name) {
            return Ok(Expr::Var(name.to_string()));
        }
        if let Some((_, func)) = self.misplaced_pure.iter().find(|(v, _)| v == name) {
            return err(
                format!("pure variable `{name}` of `{func}` can be used in this update only if it appears bare in its own position"),
                span,
            );
        }
        if let Some(input) = self.names.inputs.get(name) {
            if input.rank.is_none() {
                return Ok(Expr::Param(name.to_string(), input.dtype));
            }
            return err(
                format!("`{name}` is an input buffer; index it, e.g. `{name}(...)`"),
                span,
            );
        }
        if self.names.sizes.iter().any(|s| s == name) {
            return Ok(Expr::Size(name.to_string()));
        }
        if self.names.funcs.contains_key(name) {
            return err(
                format!("`{name}` is a function; call it with its arguments, e.g. `{name}(...)`"),
                span,
            );
        }
        if self.names.rvar_names.contains(name) {
            return err(
                format!("reduction variable `{name}` is used outside its reduction"),
                span,
            );
        }
        let suggestion = crate::suggest::did_you_mean(name, self.names_in_scope());
        err(format!("unknown name `{name}`{suggestion}"), span)
    }

    /// The names an expression here may use bare: its variables, sizes and scalar parameters.
    fn names_in_scope(&self) -> Vec<&str> {
        let vars = self
            .rvars
            .iter()
            .chain(self.pure_vars.iter())
            .chain(&self.names.sizes);
        let scalars = self.names.inputs.iter().filter(|(_, i)| i.rank.is_none());
        let scalars = scalars.map(|(name, _)| name.as_str());
        vars.map(|v| v.as_str()).chain(scalars).collect()
    }

    fn binary(
        &mut self,
        op: BinOp,
        a: &ExprAst,
        b: &ExprAst,
        hint: Option<Dtype>,
        span: Span,
    ) -> CResult<Expr> {
        if op.is_logical() {
            let a = self.expr(a, Some(Dtype::Bool))?;
            let b = self.expr(b, Some(Dtype::Bool))?;
            for side in [&a, &b] {
                let what = format!("`{}` needs bool operands", op.symbol());
                self.require(side.dtype() == Dtype::Bool, &what, side.dtype(), span)?;
            }
            return Ok(Expr::binary(op, a, b));
        }
        let hint = if op.is_comparison() { None } else { hint };
        let mut operands = self.unify(&[a, b], hint, &format!("`{}`", op.symbol()), span)?;
        let b = operands.pop().unwrap_or(Expr::Const(Value::Bool(false)));
        let a = operands.pop().unwrap_or(Expr::Const(Value::Bool(false)));
        if !op.is_comparison() || !matches!(op, BinOp::Eq | BinOp::Ne) {
            let what = format!("`{}` needs numbers", op.symbol());
            self.require(a.dtype().is_numeric(), &what, a.dtype(), span)?;
        }
        Ok(Expr::binary(op, a, b))
    }

    /// Checks operands that must share one type: typed operands first, then literals, which
    /// take the typed operands' type.
    fn unify(
        &mut self,
        operands: &[&ExprAst],
        hint: Option<Dtype>,
        what: &str,
        span: Span,
    ) -> CResult<Vec<Expr>> {
        let mut checked: Vec<Option<Expr>> = vec![None; operands.len()];
        let mut common = None;
        for (i, e) in operands
            .iter()
            .enumerate()
            .filter(|(_, e)| !e.is_flexible())
        {
            let c = self.expr(e, hint)?;
            common.get_or_insert(c.dtype());
            checked[i] = Some(c);
        }
        let literal_hint = common.or(hint);
        for (i, e) in operands.iter().enumerate().filter(|(_, e)| e.is_flexible()) {
            let c = self.expr(e, literal_hint)?;
            checked[i] = Some(c);
        }
        let checked: Vec<Expr> = checked.into_iter().flatten().collect();
        let first = checked[0].dtype();
        if let Some(other) = checked.iter().find(|c| c.dtype() != first) {
            let types: Vec<&str> = checked.iter().map(|c| c.dtype().name()).collect();
            return err(
                format!(
                    "type mismatch in {what}: {} (cast explicitly, e.g. `{}(...)`)",
                    types.join(" and "),
                    cast_suggestion(first, other.dtype())
                ),
                span,
            );
        }
        Ok(checked)
    }

    fn call(
        &mut self,
        callee: &Ident,
        args: &[ExprAst],
        hint: Option<Dtype>,
        span: Span,
    ) -> CResult<Expr> {
        let name = callee.name.as_str();
        if self.sizes_only.is_some() && !matches!(name, "min" | "max") {
            return err(
                format!(
                    "{} may only use sizes, integer constants, arithmetic, min and max",
                    self.sizes_only.unwrap_or("")
                ),
                span,
            );
        }
        if let Some(to) = Dtype::from_name(name) {
            self.arity(name, args, 1, span)?;
            let arg = self.expr(&args[0], Some(to))?;
            return Ok(Expr::Cast(to, Box::new(arg)));
        }
        if name == "select" {
            return self.select(args, hint, span);
        }
        if let Some(intrinsic) = Intrinsic::from_name(name) {
            return self.intrinsic(intrinsic, args, hint, span);
        }
        if ReduceOp::from_name(name).is_some() {
            return err(
                format!("`{name}` needs a reduction domain: `{name}(k in 0..K) body`"),
                span,
            );
        }
        if let Some(sig) = self.names.funcs.get(name) {
            let dtype = sig.dtype.ok_or_else(|| {
                Diagnostic::new(
                    format!("internal error: `{name}` used before it was checked"),
                    span,
                )
            })?;
            let checked = self.call_args(callee, args, sig.vars.len(), span)?;
            self.check_self_read(name, &checked, args)?;
            let args = checked;
            return Ok(Expr::Call(Call {
                target: CallTarget::Func,
                name: name.into(),
                args,
                dtype,
            }));
        }
        if let Some(input) = self.names.inputs.get(name) {
            let Some(rank) = input.rank else {
                return err(
                    format!("`{name}` is a scalar parameter; use it without arguments"),
                    span,
                );
            };
            let dtype = input.dtype;
            let args = self.call_args(callee, args, rank, span)?;
            return Ok(Expr::Call(Call {
                target: CallTarget::Input,
                name: name.into(),
                args,
                dtype,
            }));
        }
        let callable = self.names.funcs.keys().chain(self.names.inputs.keys());
        let suggestion = crate::suggest::did_you_mean(name, callable.map(|k| k.as_str()));
        err(
            format!("unknown function or input `{name}`{suggestion}"),
            callee.span,
        )
    }

    /// In an update of `f`, a read of `f` itself may use a pure variable only bare in its own
    /// position: `f(y, x) = f(y, x) + f(y - 1, x)` would make the pure loop `y` carry a
    /// dependency, which a recurrence expresses with a reduction variable instead.
    fn check_self_read(&self, name: &str, checked: &[Expr], args: &[ExprAst]) -> CResult<()> {
        let Some((func, vars)) = &self.updating else {
            return Ok(());
        };
        if func != name {
            return Ok(());
        }
        for (pos, (arg, ast)) in checked.iter().zip(args).enumerate() {
            let own = vars.get(pos);
            let mut misplaced = None;
            arg.for_each(&mut |e| match e {
                Expr::Var(v) if Some(v) != own || !matches!(arg, Expr::Var(_)) => {
                    misplaced.get_or_insert(v.clone());
                }
                _ => {}
            });
            if let Some(v) = misplaced {
                return err(
                    format!("pure variable `{v}` can be used in a read of `{func}` inside its update only bare, in its own position; for a recurrence, use a reduction variable: `for (r in 1..N) {func}(r, ...) = ... {func}(r - 1, ...)`"),
                    ast.span,
                );
            }
        }
        self.refuse_index_below_the_output(func, checked, args)
    }

    /// In an update of the output, an index whose least value is below 0 whatever the sizes
    /// (`out(r - 1, x)` with `r in 0..H`) reads or writes outside the output: an error here,
    /// where the bound is static (other cases are refused when a call binds its sizes).
    fn refuse_index_below_the_output(
        &self,
        func: &str,
        checked: &[Expr],
        args: &[ExprAst],
    ) -> CResult<()> {
        let Some(lows) = &self.output_rvar_lows else {
            return Ok(());
        };
        for (arg, ast) in checked.iter().zip(args) {
            if let Some(min) = static_min(arg, lows).filter(|&m| m < 0) {
                return err(
                    format!("this index of the output `{func}` reaches {min}, outside its extents: an update may read or write the output only inside them (start the reduction domain later, or compute the recurrence in a producer)"),
                    ast.span,
                );
            }
        }
        Ok(())
    }

    fn arity(&self, name: &str, args: &[ExprAst], expected: usize, span: Span) -> CResult<()> {
        if args.len() == expected {
            return Ok(());
        }
        let plural = if expected == 1 { "" } else { "s" };
        err(
            format!(
                "`{name}` takes {expected} argument{plural}, found {}",
                args.len()
            ),
            span,
        )
    }

    fn call_args(
        &mut self,
        callee: &Ident,
        args: &[ExprAst],
        rank: usize,
        span: Span,
    ) -> CResult<Vec<Expr>> {
        self.arity(&callee.name, args, rank, span)?;
        args.iter()
            .enumerate()
            .map(|(i, a)| self.index(a, &callee.name, i))
            .collect()
    }

    fn select(&mut self, args: &[ExprAst], hint: Option<Dtype>, span: Span) -> CResult<Expr> {
        self.arity("select", args, 3, span)?;
        let cond = self.expr(&args[0], Some(Dtype::Bool))?;
        self.require(
            cond.dtype() == Dtype::Bool,
            "the condition of `select` must be bool",
            cond.dtype(),
            args[0].span,
        )?;
        let mut values = self.unify(&[&args[1], &args[2]], hint, "`select`", span)?;
        let f = values.pop().unwrap_or(Expr::Const(Value::Bool(false)));
        let t = values.pop().unwrap_or(Expr::Const(Value::Bool(false)));
        Ok(Expr::Select(Box::new(cond), Box::new(t), Box::new(f)))
    }

    fn intrinsic(
        &mut self,
        f: Intrinsic,
        args: &[ExprAst],
        hint: Option<Dtype>,
        span: Span,
    ) -> CResult<Expr> {
        self.arity(f.name(), args, f.arity(), span)?;
        let hint = if f.needs_f32() {
            Some(Dtype::F32)
        } else if f.needs_float() {
            Some(hint.filter(|t| t.is_float()).unwrap_or(Dtype::F32))
        } else {
            hint
        };
        let operands: Vec<&ExprAst> = args.iter().collect();
        let checked = self.unify(&operands, hint, &format!("`{}`", f.name()), span)?;
        let dtype = checked[0].dtype();
        if f.needs_f32() {
            let what = format!(
                "`{}` is defined for f32 only (cast it, e.g. `f32(...)`, or use `{}`)",
                f.name(),
                f.name().trim_start_matches("fast_")
            );
            self.require(dtype == Dtype::F32, &what, dtype, span)?;
        } else if f.needs_float() {
            let what = format!(
                "`{}` needs a float argument (cast it, e.g. `f32(...)`)",
                f.name()
            );
            self.require(dtype.is_float(), &what, dtype, span)?;
        } else {
            let what = format!("`{}` needs numbers", f.name());
            self.require(dtype.is_numeric(), &what, dtype, span)?;
        }
        Ok(Expr::Intrinsic(f, checked))
    }

    /// Why `name` cannot be used where only sizes may be (`what`): a variable is named as one.
    fn not_a_size(&self, name: &str, what: &str) -> String {
        let allowed = "may only use sizes named in the inputs' shapes and integer constants";
        if self.names.pure_var_names.contains(name) {
            format!("`{name}` is a pure variable, not a size: {what} {allowed}")
        } else if self.names.rvar_names.contains(name) {
            format!("`{name}` is a reduction variable, not a size: {what} {allowed}")
        } else {
            format!("unbound size variable `{name}`: {what} {allowed}")
        }
    }

    fn reduce(
        &mut self,
        op: ReduceOp,
        domain: (&[RVarAst], Option<&ExprAst>),
        body: &ExprAst,
        hint: Option<Dtype>,
        span: Span,
    ) -> CResult<Expr> {
        let scope = self.rvars.len();
        let checked = self.declare_rvars(domain.0).and_then(|rvars| {
            let predicate = domain.1.map(|p| self.predicate(p)).transpose()?;
            Ok((rvars, predicate, self.expr(body, hint)?))
        });
        self.rvars.truncate(scope);
        let (rvars, predicate, body) = checked?;
        let what = format!("`{}` needs a numeric body", op.name());
        self.require(body.dtype().is_numeric(), &what, body.dtype(), span)?;
        Ok(Expr::Reduce(Reduce {
            op,
            rvars,
            predicate: predicate.map(Box::new),
            body: Box::new(body),
        }))
    }
}

/// The variables a domain bound may use besides sizes and constants.
struct BoundScope {
    /// The pure variables around the domain (in an update, those bare in its target).
    pure_vars: Vec<String>,
    /// Enclosing reduction variables and those declared before this one in its domain.
    rvars: Vec<String>,
    /// This reduction variable and those declared after it in its domain.
    later: Vec<String>,
    /// Pure variables of the updated function that are not loops of the update.
    misplaced_pure: Vec<(String, String)>,
}

impl BoundScope {
    fn name(&self, name: &str, names: &Names, span: Span) -> CResult<Expr> {
        if self.rvars.iter().any(|r| r == name) {
            return Ok(Expr::RVar(name.to_string()));
        }
        if self.pure_vars.iter().any(|v| v == name) {
            return Ok(Expr::Var(name.to_string()));
        }
        if self.later.iter().any(|r| r == name) {
            return err(
                format!("reduction variable `{name}` is not declared yet: a bound may use only reduction variables declared before it in its domain (and the variables around the domain)"),
                span,
            );
        }
        if let Some((_, func)) = self.misplaced_pure.iter().find(|(v, _)| v == name) {
            return err(
                format!("pure variable `{name}` of `{func}` can be used in this update only if it appears bare in its own position"),
                span,
            );
        }
        let what = "a reduction bound may only use sizes named in the inputs' shapes, integer constants and the variables around it";
        if names.rvar_names.contains(name) {
            return err(
                format!("reduction variable `{name}` is not in scope here: {what}"),
                span,
            );
        }
        err(format!("unbound size variable `{name}`: {what}"), span)
    }
}

/// Whether `e` is affine in the variables it reads: variables added, subtracted, negated and
/// multiplied by integer constants, with any expression of sizes and constants added.
fn is_affine(e: &Expr) -> bool {
    if !e.reads_vars() {
        return true;
    }
    let is_constant = |x: &Expr| constant_of(x).is_some() && !reads_sizes(x);
    match e {
        Expr::Var(_) | Expr::RVar(_) => true,
        Expr::Neg(a) => is_affine(a),
        Expr::Binary(BinOp::Add | BinOp::Sub, a, b) => is_affine(a) && is_affine(b),
        Expr::Binary(BinOp::Mul, a, b) => {
            (is_constant(a) && is_affine(b)) || (is_affine(a) && is_constant(b))
        }
        _ => false,
    }
}

fn reads_sizes(e: &Expr) -> bool {
    let mut found = false;
    e.for_each(&mut |x| found |= matches!(x, Expr::Size(_)));
    found
}

/// A type both operands of a mismatch convert to without loss where one exists: the wider of
/// two ints of the same signedness, a signed int wider than the unsigned one, or the float.
fn cast_suggestion(a: Dtype, b: Dtype) -> Dtype {
    let signed_above = |unsigned: Dtype| match unsigned {
        Dtype::U8 => Dtype::I16,
        Dtype::U16 => Dtype::I32,
        _ => Dtype::I64,
    };
    match (a, b) {
        (u, s) | (s, u) if u.is_unsigned_int() && s.is_signed_int() => signed_above(u).max(s),
        _ => a.max(b),
    }
}

/// The value of a literal (possibly negated) in the type its suffix or `hint` gives; `None` if
/// `e` is not a literal.
fn literal_value(e: &ExprAst, hint: Option<Dtype>) -> CResult<Option<Value>> {
    let (negative, kind) = match &e.kind {
        ExprAstKind::NegInt(v, t) => (true, LiteralKind::Int(*v, *t)),
        ExprAstKind::NegFloat(v, t) => (true, LiteralKind::Float(v, *t)),
        ExprAstKind::Int(v, t) => (false, LiteralKind::Int(*v, *t)),
        ExprAstKind::Float(v, t) => (false, LiteralKind::Float(v, *t)),
        ExprAstKind::Bool(b) => return Ok(Some(Value::Bool(*b))),
        _ => return Ok(None),
    };
    let value = match kind {
        LiteralKind::Int(v, suffix) => {
            let dtype = suffix.unwrap_or(match hint {
                Some(t) if t.is_numeric() => t,
                _ => Dtype::I32,
            });
            int_literal(v, negative, dtype, e.span)?
        }
        LiteralKind::Float(v, suffix) => {
            let dtype = suffix.unwrap_or(match hint {
                Some(t) if t.is_float() => t,
                _ => Dtype::F32,
            });
            float_literal(v, negative, dtype, e.span)?
        }
    };
    Ok(Some(value))
}

enum LiteralKind<'a> {
    Int(u128, Option<Dtype>),
    Float(&'a str, Option<Dtype>),
}

fn int_literal(magnitude: u128, negative: bool, dtype: Dtype, span: Span) -> CResult<Value> {
    if dtype.is_float() {
        return float_literal(&magnitude.to_string(), negative, dtype, span);
    }
    let value = i128::try_from(magnitude)
        .ok()
        .map(|m| if negative { -m } else { m });
    let (lo, hi) = dtype.int_range().unwrap_or((0, 0));
    match value.filter(|v| (lo..=hi).contains(v)) {
        Some(v) => Ok(Value::I64(v as i64).cast(dtype)),
        None => err(
            format!(
                "literal {}{magnitude} does not fit in {dtype} ({lo}..={hi})",
                if negative { "-" } else { "" }
            ),
            span,
        ),
    }
}

/// A float literal rounded once, from its decimal text, to `dtype`.
fn float_literal(text: &str, negative: bool, dtype: Dtype, span: Span) -> CResult<Value> {
    let sign = if negative { "-" } else { "" };
    let value = match dtype {
        Dtype::F64 => text.parse::<f64>().map(Value::F64).ok(),
        _ => text.parse::<f32>().map(Value::F32).ok(),
    };
    match value {
        Some(v) if v.as_f64().is_finite() => Ok(if negative { v.neg().unwrap_or(v) } else { v }),
        _ => err(
            format!("literal {sign}{text} does not fit in {dtype}"),
            span,
        ),
    }
}

/// The value of an expression of constants alone (exactly, as a call evaluates sizes).
fn constant_of(e: &Expr) -> Option<i64> {
    e.eval_size(&Sizes::new()).ok()
}

/// The least value an index of an update can take whatever the sizes, where its form tells:
/// pure variables start at 0, reduction variables at their constant lower bound.
fn static_min(e: &Expr, rvar_lows: &[(String, i64)]) -> Option<i64> {
    match e {
        Expr::Var(_) => Some(0),
        Expr::RVar(r) => rvar_lows.iter().find(|(n, _)| n == r).map(|(_, lo)| *lo),
        Expr::Binary(BinOp::Add, a, b) => {
            static_min(a, rvar_lows)?.checked_add(static_min(b, rvar_lows)?)
        }
        Expr::Binary(BinOp::Sub, a, b) => static_min(a, rvar_lows)?.checked_sub(constant_of(b)?),
        _ => constant_of(e),
    }
}
