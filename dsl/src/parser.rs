//! Recursive-descent parser from tokens to the syntax tree. The grammar (a file holds any number
//! of kernels):
//!
//! ```text
//! kernel   := "kernel" IDENT "(" [param ("," param)*] ")" "->" IDENT ":" TYPE "[" [expr ("," expr)*] "]"
//!             "{" stmt* "}"
//! param    := IDENT ":" TYPE ["[" [expr ("," expr)*] "]" ["with" boundary]]
//! boundary := "clamp_edge" | "mirror" | "mirror_interior" | "constant" "(" expr ")"
//! stmt     := ["for" "(" domain ")"] IDENT "(" [expr ("," expr)*] ")" ("=" | "+=" | "-=" | "*=") expr ";"
//! domain   := rvar ("," rvar)* ["where" expr]     (the predicate skips the points where it is false)
//! rvar     := IDENT "in" expr ".." expr            (bounds affine in the variables around the
//!                                                   domain and the rvars before this one)
//! expr     := or;   or := and ("||" and)*;   and := cmp ("&&" cmp)*
//! cmp      := add [("==" | "!=" | "<" | "<=" | ">" | ">=") add]        (not chained)
//! add      := mul (("+" | "-") mul)*;   mul := unary (("*" | "/" | "%") unary)*
//! unary    := ("-" | "!") unary | primary
//! primary  := NUMBER | "true" | "false" | "(" expr ")" | IDENT
//!           | IDENT "(" [expr ("," expr)*] ")"                      (call, cast or builtin)
//!           | REDUCE "(" domain ")" expr                            (REDUCE: sum prod max min;
//!                                                                    the body extends rightwards)
//! ```

use crate::ast::*;
use crate::diagnostic::{Diagnostic, Span};
use crate::dtype::Dtype;
use crate::ir::{Boundary, ReduceOp, UpdateOp};
use crate::lexer::{lex, Tok, Token};
use crate::value::BinOp;

/// How deeply expressions may nest before the parser refuses: parentheses, operands of unary
/// operators, arguments of calls and casts, reduction bodies and bounds. Each is a level of the
/// parser's own recursion; the operators of a chain (`a + b + c`) are parsed in a loop and do
/// not count.
const MAX_DEPTH: usize = 256;

/// How deep an expression's tree may be, counting each operator of a chain as a level
/// (`a + b + c` is `(a + b) + c`, two deep). The checker, printer, evaluator and lowering walk
/// trees recursively; this keeps them far from the end of their stacks. Lowering has its own
/// limit for the trees inlining builds (`strata_scheduler::lower::MAX_EXPR_DEPTH`).
pub const MAX_TREE_DEPTH: usize = 4096;

/// Parses every kernel in `src`.
pub fn parse(src: &str) -> Result<Vec<KernelAst>, Diagnostic> {
    let tokens = lex(src)?;
    let mut parser = Parser {
        tokens,
        pos: 0,
        depth: 0,
    };
    let mut kernels = Vec::new();
    while parser.peek() != &Tok::Eof {
        kernels.push(parser.kernel()?);
    }
    Ok(kernels)
}

/// Parses one expression, the whole of `src` (a schedule's `specialize` condition; the
/// checker's `check_condition` gives it its meaning).
pub fn parse_expr(src: &str) -> Result<ExprAst, Diagnostic> {
    let tokens = lex(src)?;
    let mut parser = Parser {
        tokens,
        pos: 0,
        depth: 0,
    };
    let e = parser.expr()?;
    if parser.peek() != &Tok::Eof {
        return Err(parser.error_here("the end of the condition"));
    }
    Ok(e)
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
    depth: usize,
}

type PResult<T> = Result<T, Diagnostic>;

impl Parser {
    fn peek(&self) -> &Tok {
        &self.tokens[self.pos].tok
    }

    fn peek_at(&self, ahead: usize) -> &Tok {
        let last = self.tokens.len() - 1;
        &self.tokens[(self.pos + ahead).min(last)].tok
    }

    fn span(&self) -> Span {
        self.tokens[self.pos].span
    }

    fn prev_span(&self) -> Span {
        self.tokens[self.pos.saturating_sub(1)].span
    }

    fn bump(&mut self) -> Token {
        let token = self.tokens[self.pos].clone();
        if token.tok != Tok::Eof {
            self.pos += 1;
        }
        token
    }

    fn eat(&mut self, tok: &Tok) -> bool {
        if self.peek() == tok {
            self.bump();
            true
        } else {
            false
        }
    }

    fn error_here(&self, expected: &str) -> Diagnostic {
        Diagnostic::new(
            format!("expected {expected}, found {}", self.peek().describe()),
            self.span(),
        )
    }

    fn expect(&mut self, tok: Tok) -> PResult<Span> {
        if self.peek() == &tok {
            Ok(self.bump().span)
        } else {
            Err(self.error_here(&tok.describe()))
        }
    }

    fn ident(&mut self, what: &str) -> PResult<Ident> {
        match self.peek().clone() {
            Tok::Ident(name) => Ok(Ident {
                name,
                span: self.bump().span,
            }),
            _ => Err(self.error_here(what)),
        }
    }

    fn keyword(&mut self, word: &str) -> PResult<Span> {
        match self.peek() {
            Tok::Ident(name) if name == word => Ok(self.bump().span),
            _ => Err(self.error_here(&format!("`{word}`"))),
        }
    }

    fn at_keyword(&self, word: &str) -> bool {
        matches!(self.peek(), Tok::Ident(name) if name == word)
    }

    /// Parses `item` repeatedly, separated by commas, until `close` (which is consumed).
    fn list<T>(
        &mut self,
        close: Tok,
        mut item: impl FnMut(&mut Self) -> PResult<T>,
    ) -> PResult<Vec<T>> {
        let mut items = Vec::new();
        if self.eat(&close) {
            return Ok(items);
        }
        loop {
            items.push(item(self)?);
            if self.eat(&close) {
                return Ok(items);
            }
            if !self.eat(&Tok::Comma) {
                return Err(self.error_here(&format!("`,` or {}", close.describe())));
            }
        }
    }

    fn kernel(&mut self) -> PResult<KernelAst> {
        self.keyword("kernel")?;
        let name = self.ident("a kernel name")?;
        self.expect(Tok::LParen)?;
        let params = self.list(Tok::RParen, Self::param)?;
        self.expect(Tok::Arrow)?;
        let output = self.output()?;
        self.expect(Tok::LBrace)?;
        let mut stmts = Vec::new();
        while !self.eat(&Tok::RBrace) {
            if self.peek() == &Tok::Eof {
                return Err(self.error_here("`}` to close the kernel"));
            }
            stmts.push(self.stmt()?);
        }
        Ok(KernelAst {
            name,
            params,
            output,
            stmts,
        })
    }

    fn dtype(&mut self) -> PResult<(Dtype, Span)> {
        let ident = self.ident("a type")?;
        match Dtype::from_name(&ident.name) {
            Some(t) => Ok((t, ident.span)),
            None => Err(Diagnostic::new(
                format!(
                    "unknown type `{}` (the types are bool, u8, u16, u32, i8, i16, i32, i64, f32, f64)",
                    ident.name
                ),
                ident.span,
            )),
        }
    }

    fn param(&mut self) -> PResult<ParamAst> {
        let name = self.ident("a parameter name")?;
        self.expect(Tok::Colon)?;
        let (dtype, dtype_span) = self.dtype()?;
        let mut param = ParamAst {
            name,
            dtype,
            dtype_span,
            shape: None,
            boundary: None,
        };
        if self.eat(&Tok::LBracket) {
            param.shape = Some(self.list(Tok::RBracket, Self::expr)?);
            if self.at_keyword("with") {
                self.bump();
                param.boundary = Some(self.boundary()?);
            }
        }
        Ok(param)
    }

    fn boundary(&mut self) -> PResult<(BoundaryAst, Span)> {
        let ident = self.ident("a boundary condition")?;
        let known = |b| Ok((BoundaryAst::Known(b), ident.span));
        match ident.name.as_str() {
            "clamp_edge" => known(Boundary::ClampEdge),
            "mirror" => known(Boundary::Mirror),
            "mirror_interior" => known(Boundary::MirrorInterior),
            "constant" => {
                self.expect(Tok::LParen)?;
                let value = self.expr()?;
                self.expect(Tok::RParen)?;
                Ok((BoundaryAst::Constant(value), ident.span.to(self.prev_span())))
            }
            other => Err(Diagnostic::new(
                format!(
                    "unknown boundary condition `{other}` (use clamp_edge, constant(v), mirror or mirror_interior)"
                ),
                ident.span,
            )),
        }
    }

    fn output(&mut self) -> PResult<OutputAst> {
        let name = self.ident("the output's name")?;
        self.expect(Tok::Colon)?;
        let (dtype, _) = self.dtype()?;
        self.expect(Tok::LBracket)?;
        let extents = self.list(Tok::RBracket, Self::expr)?;
        let span = name.span.to(self.prev_span());
        Ok(OutputAst {
            name,
            dtype,
            extents,
            span,
        })
    }

    fn stmt(&mut self) -> PResult<StmtAst> {
        let start = self.span();
        let (mut rvars, mut predicate) = (Vec::new(), None);
        if self.at_keyword("for") {
            self.bump();
            self.expect(Tok::LParen)?;
            (rvars, predicate) = self.domain()?;
        }
        let target = self.ident("a function definition")?;
        self.expect(Tok::LParen)?;
        let args = self.list(Tok::RParen, Self::expr)?;
        let op_span = self.span();
        let op = match self.peek() {
            Tok::Assign => UpdateOp::Assign,
            Tok::PlusAssign => UpdateOp::Add,
            Tok::MinusAssign => UpdateOp::Sub,
            Tok::StarAssign => UpdateOp::Mul,
            _ => return Err(self.error_here("`=`, `+=`, `-=` or `*=`")),
        };
        self.bump();
        let value = self.expr()?;
        self.expect(Tok::Semi)?;
        Ok(StmtAst {
            rvars,
            predicate,
            target,
            args,
            op,
            op_span,
            value,
            span: start.to(self.prev_span()),
        })
    }

    /// A reduction domain after its `(`: variables, then an optional `where` predicate, then
    /// `)` (consumed). `for ()` is an empty domain.
    fn domain(&mut self) -> PResult<(Vec<RVarAst>, Option<ExprAst>)> {
        let mut rvars = Vec::new();
        if self.eat(&Tok::RParen) {
            return Ok((rvars, None));
        }
        loop {
            rvars.push(self.rvar()?);
            if self.eat(&Tok::RParen) {
                return Ok((rvars, None));
            }
            if self.at_keyword("where") {
                self.bump();
                let predicate = self.expr()?;
                self.expect(Tok::RParen)?;
                return Ok((rvars, Some(predicate)));
            }
            if !self.eat(&Tok::Comma) {
                return Err(self.error_here("`,`, `where` or `)`"));
            }
        }
    }

    fn rvar(&mut self) -> PResult<RVarAst> {
        let name = self.ident("a reduction variable")?;
        self.keyword("in")?;
        let lo = self.expr()?;
        self.expect(Tok::DotDot)?;
        let hi = self.expr()?;
        Ok(RVarAst { name, lo, hi })
    }

    fn expr(&mut self) -> PResult<ExprAst> {
        let outermost = self.depth == 0;
        let e = self.nested(|p| p.binary(1))?;
        if outermost {
            check_tree_depth(&e)?;
        }
        Ok(e)
    }

    /// Parses operators of precedence `min_prec` and tighter, left-associative.
    fn binary(&mut self, min_prec: u8) -> PResult<ExprAst> {
        if min_prec > 5 {
            return self.unary();
        }
        let mut lhs = self.binary(min_prec + 1)?;
        self.binary_chain(min_prec, &mut lhs)?;
        Ok(lhs)
    }

    /// The `op rhs` continuations of a left-associative chain, in a loop: a long chain is
    /// flat text, not nesting (its tree's depth is checked by `check_tree_depth`).
    fn binary_chain(&mut self, min_prec: u8, lhs: &mut ExprAst) -> PResult<()> {
        while let Some(op) = binop_of(self.peek()).filter(|op| op.precedence() == min_prec) {
            self.bump();
            let rhs = self.binary(min_prec + 1)?;
            if op.is_comparison() {
                if let Some(next) = binop_of(self.peek()).filter(|o| o.is_comparison()) {
                    return Err(Diagnostic::new(
                        format!("comparisons cannot be chained: use `&&` or parentheses around the first before `{}`", next.symbol()),
                        self.span(),
                    ));
                }
            }
            let span = lhs.span.to(rhs.span);
            let left = std::mem::replace(
                lhs,
                ExprAst {
                    kind: ExprAstKind::Bool(false),
                    span,
                },
            );
            *lhs = ExprAst {
                kind: ExprAstKind::Binary(op, Box::new(left), Box::new(rhs)),
                span,
            };
        }
        Ok(())
    }

    /// Goes one level deeper, refusing past `MAX_DEPTH`.
    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Diagnostic::new(
                format!("expression nested more than {MAX_DEPTH} deep"),
                self.span(),
            ));
        }
        Ok(())
    }

    fn unary(&mut self) -> PResult<ExprAst> {
        let start = self.span();
        match self.peek() {
            Tok::Minus => {
                self.bump();
                let operand = self.nested(Self::unary)?;
                let span = start.to(operand.span);
                let kind = match operand.kind {
                    ExprAstKind::Int(v, t) => ExprAstKind::NegInt(v, t),
                    ExprAstKind::Float(v, t) => ExprAstKind::NegFloat(v, t),
                    _ => ExprAstKind::Neg(Box::new(operand)),
                };
                Ok(ExprAst { kind, span })
            }
            Tok::Bang => {
                self.bump();
                let operand = self.nested(Self::unary)?;
                let span = start.to(operand.span);
                Ok(ExprAst {
                    kind: ExprAstKind::Not(Box::new(operand)),
                    span,
                })
            }
            _ => self.primary(),
        }
    }

    /// Runs `parse` one nesting level deeper, refusing past `MAX_DEPTH`.
    fn nested(&mut self, parse: fn(&mut Self) -> PResult<ExprAst>) -> PResult<ExprAst> {
        let depth_on_entry = self.depth;
        let result = self.enter().and_then(|()| parse(self));
        self.depth = depth_on_entry;
        result
    }

    fn primary(&mut self) -> PResult<ExprAst> {
        let token = self.bump();
        let span = token.span;
        let leaf = |kind| Ok(ExprAst { kind, span });
        match token.tok {
            Tok::Int(v, t) => leaf(ExprAstKind::Int(v, t)),
            Tok::Float(v, t) => leaf(ExprAstKind::Float(v, t)),
            Tok::LParen => {
                let inner = self.expr()?;
                self.expect(Tok::RParen)?;
                Ok(ExprAst {
                    kind: inner.kind,
                    span: span.to(self.prev_span()),
                })
            }
            Tok::Ident(name) if name == "true" || name == "false" => {
                leaf(ExprAstKind::Bool(name == "true"))
            }
            Tok::Ident(name) => self.name_or_call(Ident { name, span }),
            other => {
                self.pos -= usize::from(other != Tok::Eof);
                Err(self.error_here("an expression"))
            }
        }
    }

    fn name_or_call(&mut self, name: Ident) -> PResult<ExprAst> {
        if self.peek() != &Tok::LParen {
            return Ok(ExprAst {
                span: name.span,
                kind: ExprAstKind::Name(name.name),
            });
        }
        let is_reduction = matches!(self.peek_at(1), Tok::Ident(_))
            && matches!(self.peek_at(2), Tok::Ident(w) if w == "in");
        self.bump();
        if let Some(op) = ReduceOp::from_name(&name.name).filter(|_| is_reduction) {
            let (rvars, predicate) = self.domain()?;
            let body = self.expr()?;
            return Ok(ExprAst {
                span: name.span.to(body.span),
                kind: ExprAstKind::Reduce(op, rvars, predicate.map(Box::new), Box::new(body)),
            });
        }
        let args = self.list(Tok::RParen, Self::expr)?;
        Ok(ExprAst {
            span: name.span.to(self.prev_span()),
            kind: ExprAstKind::Call(name, args),
        })
    }
}

/// Refuses an expression whose tree is deeper than `MAX_TREE_DEPTH`. Walks with an explicit
/// stack: the tree may be as deep as its longest operator chain.
fn check_tree_depth(e: &ExprAst) -> PResult<()> {
    let mut pending = vec![(e, 1)];
    while let Some((e, depth)) = pending.pop() {
        if depth > MAX_TREE_DEPTH {
            return Err(Diagnostic::new(
                format!(
                    "expression more than {MAX_TREE_DEPTH} levels deep, counting each operator of a chain as a level: split it into several functions"
                ),
                e.span,
            ));
        }
        let children: Vec<&ExprAst> = match &e.kind {
            ExprAstKind::Call(_, args) => args.iter().collect(),
            ExprAstKind::Neg(a) | ExprAstKind::Not(a) => vec![a],
            ExprAstKind::Binary(_, a, b) => vec![a, b],
            ExprAstKind::Reduce(_, rvars, predicate, body) => rvars
                .iter()
                .flat_map(|r| [&r.lo, &r.hi])
                .chain(predicate.as_deref())
                .chain([&**body])
                .collect(),
            _ => Vec::new(),
        };
        pending.extend(children.into_iter().map(|c| (c, depth + 1)));
    }
    Ok(())
}

fn binop_of(tok: &Tok) -> Option<BinOp> {
    Some(match tok {
        Tok::Plus => BinOp::Add,
        Tok::Minus => BinOp::Sub,
        Tok::Star => BinOp::Mul,
        Tok::Slash => BinOp::Div,
        Tok::Percent => BinOp::Mod,
        Tok::EqEq => BinOp::Eq,
        Tok::NotEq => BinOp::Ne,
        Tok::Lt => BinOp::Lt,
        Tok::Le => BinOp::Le,
        Tok::Gt => BinOp::Gt,
        Tok::Ge => BinOp::Ge,
        Tok::AndAnd => BinOp::And,
        Tok::OrOr => BinOp::Or,
        _ => return None,
    })
}
