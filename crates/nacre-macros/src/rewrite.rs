//! The expression rewriter: turns the body of a `#[jit]` function into calls of the runtime's
//! structured control-flow API (`::nacre::cf`). See the crate docs for the rules.
//!
//! Generated code is spanned in three ways:
//! - the `cf` function a construct calls gets the span of the user's keyword or operator
//!   (`if`, `while`, `<`, ...), so trait errors (a condition that is not a `bool` or
//!   `Val<bool>`, a comparison of mismatched types) point at the user's code;
//! - state variables keep the span of their first assignment (see [`crate::state`]);
//! - plumbing (closures, `Flow` matching, temporaries) gets the macro's call-site span, or the
//!   mixed-site span for temporaries, so that lints about it (unreachable code after a
//!   diverging branch, ...) are attributed to the macro rather than to the user.

use crate::analysis;
use crate::state::{self, Bind};
use proc_macro2::{Delimiter, Ident, Literal, Span, TokenStream, TokenTree};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{BinOp, Block, Error, Expr, ExprIf, Lifetime, Pat, Stmt, Type};

/// Where an expression's value goes.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum Pos {
    /// Evaluated for its effect only (a statement, a loop body): an `if` here yields `()`.
    Stmt,
    /// An ordinary value.
    Value,
    /// The value returned from the function (its tail, or the operand of `return`): converted
    /// into the declared return type with `Into`, pushed into `if`/`match` arms and block
    /// tails, so that `if c { 1 } else { x }` can return a `Val<i32>` and branches merge
    /// traced values.
    Tail,
}

/// The shape of a construct's output.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Output {
    /// `(state, value)`: an `if` whose value is used.
    Value,
    /// `(state, ())`: an `if` statement.
    Unit,
    /// `state`: a loop.
    State,
}

/// An expression after an attempt to rewrite it as a range literal.
enum Ranged {
    /// It was one: the `cf::range` call.
    Range(Expr),
    /// It was not: the expression, unchanged.
    Other(Expr),
}

/// A loop being rewritten.
struct LoopFrame {
    label: Option<Lifetime>,
    /// Its state: the variables `break`/`continue` carry to it.
    state: Vec<Ident>,
    /// `scopes.len()` where its body starts: `let`s above that mark may shadow its state.
    scope_mark: usize,
}

/// Rewrites one function body.
pub(crate) struct Rewriter {
    /// The declared return type (`None` for `()`).
    ret: Option<Type>,
    /// Enclosing loops, innermost last.
    loops: Vec<LoopFrame>,
    /// Names declared by the user's code, one list per scope, innermost last.
    scopes: Vec<Vec<Ident>>,
    /// Set inside a generated closure that does not return `Flow` (a `while` condition, the
    /// right operand of `&&`/`||`): control flow cannot leave it.
    barrier: Option<&'static str>,
    /// Whether an index read was rewritten (the read traits must be imported).
    pub(crate) index_read: bool,
    /// Whether an index write was rewritten.
    pub(crate) index_write: bool,
    errors: Option<Error>,
}

/// A hygienic name for a generated temporary.
/// `call` in a scope that names the construct and the variables it carries for trace errors
/// (`cf::carrying`); unchanged for a construct that carries nothing.
fn named_call(construct: &str, state: &[Ident], span: Span, call: TokenStream) -> TokenStream {
    if state.is_empty() {
        return call;
    }
    let names = state
        .iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let guard = tmp("__nacre_carrying");
    let file = quote_spanned!(span=> ::core::file!());
    let line = quote_spanned!(span=> ::core::line!());
    let slots = state.iter().map(|v| quote!(::nacre::cf::slot_count(&#v)));
    quote!({
        let #guard = ::nacre::cf::carrying(#construct, #names, &[#( #slots ),*], #file, #line);
        #call
    })
}

fn tmp(name: &str) -> Ident {
    Ident::new(name, Span::mixed_site())
}

/// Replaces an expression by an empty one and returns it (to move out of a `Box`).
fn take(e: &mut Expr) -> Expr {
    std::mem::replace(e, Expr::Verbatim(TokenStream::new()))
}

/// Removes the parentheses around an expression that becomes a call argument or a closure
/// body, where the user's own parentheses would be reported as unnecessary.
fn unparen(e: Expr) -> Expr {
    match e {
        Expr::Paren(p) if p.attrs.is_empty() => unparen(*p.expr),
        e => e,
    }
}

/// Whether a condition is (or chains) a `let` pattern match.
fn has_let(e: &Expr) -> bool {
    match e {
        Expr::Let(_) => true,
        Expr::Binary(b) if matches!(b.op, BinOp::And(_)) => has_let(&b.left) || has_let(&b.right),
        Expr::Group(g) => has_let(&g.expr),
        _ => false,
    }
}

/// Whether an expression can be an operand of `&` or a method receiver without parentheses.
fn is_atomic(e: &Expr) -> bool {
    matches!(
        e,
        Expr::Path(_)
            | Expr::Lit(_)
            | Expr::Call(_)
            | Expr::MethodCall(_)
            | Expr::Field(_)
            | Expr::Index(_)
            | Expr::Paren(_)
            | Expr::Group(_)
            | Expr::Tuple(_)
            | Expr::Array(_)
            | Expr::Macro(_)
            | Expr::Verbatim(_)
            | Expr::Block(_)
            | Expr::Unsafe(_)
    )
}

/// The expression's tokens, parenthesised unless atomic.
fn operand(e: Expr) -> TokenStream {
    let e = unparen(e);
    if is_atomic(&e) {
        e.into_token_stream()
    } else {
        quote!((#e))
    }
}

/// `&operand`, the `&` spanned at the operand (so errors about it point at the user's code).
fn borrowed(e: Expr) -> TokenStream {
    let span = e.span();
    let e = operand(e);
    quote_spanned!(span=> &#e)
}

/// Whether printed tokens end with `}` (an expression that cannot precede `else` in `let`).
fn ends_with_brace(tokens: &TokenStream) -> bool {
    matches!(tokens.clone().into_iter().last(), Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace)
}

/// The binary operator of a compound assignment (`+` for `+=`), with its span.
fn compound_base(op: &BinOp) -> TokenStream {
    let s = op.span();
    match op {
        BinOp::AddAssign(_) => quote_spanned!(s=> +),
        BinOp::SubAssign(_) => quote_spanned!(s=> -),
        BinOp::MulAssign(_) => quote_spanned!(s=> *),
        BinOp::DivAssign(_) => quote_spanned!(s=> /),
        BinOp::RemAssign(_) => quote_spanned!(s=> %),
        BinOp::BitXorAssign(_) => quote_spanned!(s=> ^),
        BinOp::BitAndAssign(_) => quote_spanned!(s=> &),
        BinOp::BitOrAssign(_) => quote_spanned!(s=> |),
        BinOp::ShlAssign(_) => quote_spanned!(s=> <<),
        _ => quote_spanned!(s=> >>),
    }
}

/// The `cf` function of a comparison operator.
fn comparison(op: &BinOp) -> Option<&'static str> {
    Some(match op {
        BinOp::Lt(_) => "lt",
        BinOp::Le(_) => "le",
        BinOp::Gt(_) => "gt",
        BinOp::Ge(_) => "ge",
        BinOp::Eq(_) => "eq",
        BinOp::Ne(_) => "ne",
        _ => return None,
    })
}

impl Rewriter {
    /// A rewriter for a function returning `ret` (`None` for `()`).
    pub(crate) fn new(ret: Option<Type>) -> Rewriter {
        Rewriter {
            ret,
            loops: Vec::new(),
            scopes: Vec::new(),
            barrier: None,
            index_read: false,
            index_write: false,
            errors: None,
        }
    }

    /// The errors met, if any.
    pub(crate) fn finish(self) -> Result<(), Error> {
        match self.errors {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn error(&mut self, e: Error) {
        match &mut self.errors {
            Some(all) => all.combine(e),
            None => self.errors = Some(e),
        }
    }

    fn declare(&mut self, names: Vec<Ident>) {
        if let Some(s) = self.scopes.last_mut() {
            s.extend(names);
        }
    }

    /// Reports control flow inside a closure that cannot propagate it; true if so.
    fn blocked(&mut self, span: Span, what: &str) -> bool {
        match self.barrier {
            Some(place) => {
                self.error(Error::new(
                    span,
                    format!(
                        "`#[jit]` does not support {what} inside {place}: compute the value into a \
                         variable before it"
                    ),
                ));
                true
            }
            None => false,
        }
    }

    fn with_barrier<T>(&mut self, place: &'static str, f: impl FnOnce(&mut Self) -> T) -> T {
        let outer = self.barrier.replace(place);
        let r = f(self);
        self.barrier = outer;
        r
    }

    /// The statements and tail of the closure passed to `cf::function_body`.
    pub(crate) fn function_body(&mut self, block: Block) -> TokenStream {
        let mut stmts = block.stmts;
        let tail = match stmts.pop() {
            Some(Stmt::Expr(e, None)) => Some(e),
            Some(other) => {
                stmts.push(other);
                None
            }
            None => None,
        };
        let ends_diverging = stmts.last().is_some_and(analysis::stmt_diverges);
        self.scopes.push(Vec::new());
        let stmts: Vec<Stmt> = stmts.into_iter().map(|s| self.stmt(s)).collect();
        let tail = match tail {
            Some(e) => {
                let diverging = analysis::diverges(&e);
                let pos = if self.ret.is_some() {
                    Pos::Tail
                } else {
                    Pos::Stmt
                };
                let e = unparen(self.expr(e, pos));
                if diverging {
                    e.into_token_stream()
                } else {
                    quote!(::nacre::cf::Flow::Next(#e))
                }
            }
            None if self.ret.is_none() && !ends_diverging => quote!(::nacre::cf::Flow::Next(())),
            None => TokenStream::new(),
        };
        self.scopes.pop();
        quote!(#(#stmts)* #tail)
    }

    fn stmt(&mut self, s: Stmt) -> Stmt {
        match s {
            Stmt::Local(mut l) => {
                if let Some(init) = &mut l.init {
                    let e = take(&mut init.expr);
                    *init.expr = self.expr(e, Pos::Value);
                    if let Some((_, d)) = &mut init.diverge {
                        let e = take(d);
                        **d = self.expr(e, Pos::Value);
                    }
                }
                self.declare(analysis::bindings(&l.pat));
                Stmt::Local(l)
            }
            Stmt::Expr(e, semi) => Stmt::Expr(self.expr(e, Pos::Stmt), semi),
            other => other,
        }
    }

    fn block(&mut self, b: Block, pos: Pos) -> Block {
        self.scopes.push(Vec::new());
        let n = b.stmts.len();
        let stmts = b
            .stmts
            .into_iter()
            .enumerate()
            .map(|(i, s)| match s {
                Stmt::Expr(e, None) if i + 1 == n => Stmt::Expr(self.expr(e, pos), None),
                s => self.stmt(s),
            })
            .collect();
        self.scopes.pop();
        Block {
            brace_token: b.brace_token,
            stmts,
        }
    }

    /// Converts a value returned from the function into the declared return type.
    fn convert_ret(&self, e: Expr) -> Expr {
        match &self.ret {
            Some(ty) => {
                let path = quote!(::core::convert::Into::<#ty>::into);
                let e = unparen(e);
                Expr::Verbatim(quote!(#path(#e)))
            }
            None => e,
        }
    }

    /// Rewrites an expression in position `pos`.
    pub(crate) fn expr(&mut self, e: Expr, pos: Pos) -> Expr {
        let pushes_tail = matches!(
            &e,
            Expr::If(_) | Expr::Match(_) | Expr::Unsafe(_) | Expr::Paren(_) | Expr::Group(_)
        ) || matches!(&e, Expr::Block(b) if b.label.is_none());
        if pos == Pos::Tail && !pushes_tail {
            let diverging = analysis::diverges(&e);
            let e = self.expr(e, Pos::Value);
            return if diverging { e } else { self.convert_ret(e) };
        }
        // Arms of constructs that run natively (`match`, `if let`) must agree on their type.
        let arm_pos = if pos == Pos::Tail {
            Pos::Tail
        } else {
            Pos::Value
        };
        match e {
            Expr::If(i) if has_let(&i.cond) => self.if_let(i, arm_pos),
            Expr::If(i) => self.if_else(i, pos),
            Expr::While(mut w) => match take(&mut w.cond) {
                Expr::Let(l) => self.while_let(w, l),
                cond => {
                    *w.cond = cond;
                    self.while_loop(w)
                }
            },
            Expr::Loop(l) => self.loop_(l),
            Expr::ForLoop(f) => self.for_loop(f),
            Expr::Break(b) => self.break_(b),
            Expr::Continue(c) => self.continue_(c),
            Expr::Return(r) => self.return_(r),
            Expr::Binary(b) => self.binary(b),
            Expr::Assign(a) => self.assign(a),
            Expr::Index(i) => self.index_read(i),
            Expr::Try(t) => {
                self.error(Error::new(
                    t.question_token.span,
                    "`#[jit]` does not support the `?` operator (the body runs inside generated \
                     closures that return control-flow markers); use `match` instead",
                ));
                Expr::Try(t)
            }
            Expr::Block(b) if b.label.is_some() => {
                let label = b
                    .label
                    .as_ref()
                    .map(|l| l.name.span())
                    .unwrap_or_else(Span::call_site);
                self.error(Error::new(label, "`#[jit]` does not support labelled blocks; use a labelled `loop` that ends with `break`"));
                Expr::Block(b)
            }
            Expr::Block(mut b) => {
                b.block = self.block(b.block, pos);
                Expr::Block(b)
            }
            Expr::Unsafe(mut u) => {
                u.block = self.block(u.block, pos);
                Expr::Unsafe(u)
            }
            Expr::Paren(mut p) => {
                *p.expr = self.expr(take(&mut p.expr), pos);
                Expr::Paren(p)
            }
            Expr::Group(mut g) => {
                *g.expr = self.expr(take(&mut g.expr), pos);
                Expr::Group(g)
            }
            Expr::Match(m) => match crate::pattern::lower(&m) {
                Some(Ok(chain)) => self.expr(chain, pos),
                Some(Err(e)) => {
                    self.error(e);
                    Expr::Match(m)
                }
                None => self.native_match(m, arm_pos),
            },
            Expr::Reference(mut r) => {
                *r.expr = self.place(take(&mut r.expr));
                Expr::Reference(r)
            }
            Expr::Field(mut f) => {
                *f.base = self.place(take(&mut f.base));
                Expr::Field(f)
            }
            Expr::MethodCall(mut m) => {
                *m.receiver = self.expr(take(&mut m.receiver), Pos::Value);
                self.exprs(m.args.iter_mut());
                Expr::MethodCall(m)
            }
            Expr::Call(mut c) => {
                *c.func = self.expr(take(&mut c.func), Pos::Value);
                self.exprs(c.args.iter_mut());
                Expr::Call(c)
            }
            Expr::Unary(mut u) => {
                *u.expr = self.expr(take(&mut u.expr), Pos::Value);
                Expr::Unary(u)
            }
            Expr::Cast(mut c) => {
                *c.expr = self.expr(take(&mut c.expr), Pos::Value);
                Expr::Cast(c)
            }
            Expr::Array(mut a) => {
                self.exprs(a.elems.iter_mut());
                Expr::Array(a)
            }
            Expr::Tuple(mut t) => {
                self.exprs(t.elems.iter_mut());
                Expr::Tuple(t)
            }
            Expr::Repeat(mut r) => {
                *r.expr = self.expr(take(&mut r.expr), Pos::Value);
                Expr::Repeat(r)
            }
            Expr::Struct(mut s) => {
                for f in &mut s.fields {
                    f.expr = self.expr(take(&mut f.expr), Pos::Value);
                }
                if let Some(rest) = &mut s.rest {
                    **rest = self.expr(take(rest), Pos::Value);
                }
                Expr::Struct(s)
            }
            Expr::Range(mut r) => {
                if let Some(s) = &mut r.start {
                    **s = self.expr(take(s), Pos::Value);
                }
                if let Some(e) = &mut r.end {
                    **e = self.expr(take(e), Pos::Value);
                }
                Expr::Range(r)
            }
            Expr::Let(mut l) => {
                *l.expr = self.place(take(&mut l.expr));
                Expr::Let(l)
            }
            // Closures, macros, async and const blocks, literals and paths stay as written:
            // user closures are plain Rust and run as such.
            other => other,
        }
    }

    fn exprs<'a>(&mut self, es: impl Iterator<Item = &'a mut Expr>) {
        for e in es {
            *e = self.expr(take(e), Pos::Value);
        }
    }

    /// Rewrites a place expression (under `&`, a field access, a `match` scrutinee): indexing
    /// at its top stays native Rust indexing, its index operands are rewritten.
    fn place(&mut self, e: Expr) -> Expr {
        match e {
            Expr::Index(mut i) => {
                *i.expr = self.place(take(&mut i.expr));
                *i.index = self.expr(take(&mut i.index), Pos::Value);
                Expr::Index(i)
            }
            Expr::Field(mut f) => {
                *f.base = self.place(take(&mut f.base));
                Expr::Field(f)
            }
            Expr::Paren(mut p) => {
                *p.expr = self.place(take(&mut p.expr));
                Expr::Paren(p)
            }
            Expr::Group(mut g) => {
                *g.expr = self.place(take(&mut g.expr));
                Expr::Group(g)
            }
            Expr::Path(p) => Expr::Path(p),
            other => self.expr(other, Pos::Value),
        }
    }

    /// The arms that follow a construct's call: write the state back (and yield the value of
    /// an `if`), or propagate an exit out of the enclosing generated closure. `kind` is the
    /// shape of the construct's output.
    fn exit_arms(&self, state: &[Ident], kind: Output) -> TokenStream {
        let (s, v) = (tmp("__nacre_s"), tmp("__nacre_v"));
        let tuple = state::tuple(state);
        let (allow, bind_s, writeback) = if state.is_empty() {
            (quote!(), quote!(_), quote!())
        } else {
            (
                quote!(#[allow(unused_assignments)]),
                quote!(#s),
                quote!(#tuple = #s;),
            )
        };
        let next = match kind {
            Output::Value => {
                quote!(#allow ::nacre::cf::Flow::Next((#bind_s, #v)) => { #writeback #v })
            }
            Output::Unit => quote!(#allow ::nacre::cf::Flow::Next((#bind_s, ())) => { #writeback }),
            Output::State => quote!(#allow ::nacre::cf::Flow::Next(#bind_s) => { #writeback }),
        };
        quote! {
            #next
            ::nacre::cf::Flow::Exit => return ::nacre::cf::Flow::Exit,
        }
    }

    /// `if c { A } else { B }` with a plain or traced condition.
    fn if_else(&mut self, i: ExprIf, pos: Pos) -> Expr {
        let span = i.if_token.span;
        if self.blocked(span, "`if`") {
            return Expr::If(i);
        }
        let ExprIf {
            attrs,
            cond,
            then_branch,
            else_branch,
            ..
        } = i;
        let state =
            analysis::assigned_in_branches(&then_branch, else_branch.as_ref().map(|(_, e)| &**e));
        let then_assigned = analysis::assigned_in_block(&then_branch);
        let then_diverges = analysis::block_diverges(&then_branch);
        let cond = unparen(self.expr(*cond, Pos::Value));
        let then_body = self.block(then_branch, pos).into_token_stream();
        let then_c = self.branch_closure(&state, &then_assigned, then_body, then_diverges, pos);
        let else_c = match else_branch {
            Some((_, e)) => {
                let assigned = analysis::assigned_in_expr(&e);
                let diverges = analysis::diverges(&e);
                let body = self.expr(*e, pos).into_token_stream();
                self.branch_closure(&state, &assigned, body, diverges, pos)
            }
            None => {
                let s = tmp("__nacre_s");
                quote!(|#s| ::nacre::cf::Flow::Next((#s, ())))
            }
        };
        let (f, kind) = if pos == Pos::Stmt {
            (
                quote_spanned!(span=> ::nacre::cf::branch::<_, _, ()>),
                Output::Unit,
            )
        } else {
            (quote_spanned!(span=> ::nacre::cf::branch), Output::Value)
        };
        let input = state::input(&state);
        let arms = self.exit_arms(&state, kind);
        let call = quote_spanned!(span=> #f(#cond, #input, #then_c, #else_c));
        let call = named_call("if", &state, span, call);
        Expr::Verbatim(quote! {
            #(#attrs)*
            match #call { #arms }
        })
    }

    /// One branch of an `if`: rebinds the state, runs the body, returns the state and value.
    /// A body that always exits gets no tail (it would be unreachable code).
    fn branch_closure(
        &self,
        state: &[Ident],
        assigned: &[Ident],
        body: TokenStream,
        diverges: bool,
        pos: Pos,
    ) -> TokenStream {
        let pat = state::pattern(state, |v| {
            if assigned.contains(v) {
                Bind::Mut
            } else {
                Bind::Plain
            }
        });
        let tuple = state::tuple(state);
        if diverges {
            quote!(|#pat| #body)
        } else if pos == Pos::Stmt {
            quote!(|#pat| { #body; ::nacre::cf::Flow::Next((#tuple, ())) })
        } else {
            let v = tmp("__nacre_v");
            quote!(|#pat| { let #v = #body; ::nacre::cf::Flow::Next((#tuple, #v)) })
        }
    }

    /// A `match` Rust runs: its scrutinee is a place, its arms are rewritten in place.
    fn native_match(&mut self, mut m: syn::ExprMatch, arm_pos: Pos) -> Expr {
        *m.expr = self.place(take(&mut m.expr));
        for arm in &mut m.arms {
            self.scopes.push(analysis::bindings(&arm.pat));
            *arm.body = self.expr(take(&mut arm.body), arm_pos);
            self.scopes.pop();
        }
        Expr::Match(m)
    }

    /// `if let` (and let chains) run natively; their branches are rewritten in place.
    fn if_let(&mut self, mut i: ExprIf, pos: Pos) -> Expr {
        self.scopes.push(Vec::new());
        *i.cond = self.let_cond(take(&mut i.cond));
        i.then_branch = self.block(i.then_branch, pos);
        self.scopes.pop();
        if let Some((_, e)) = &mut i.else_branch {
            **e = self.expr(take(e), pos);
        }
        Expr::If(i)
    }

    /// A condition with `let` patterns: the patterns' bindings are declared in the current
    /// scope; `&&` stays native (it is a let chain).
    fn let_cond(&mut self, e: Expr) -> Expr {
        match e {
            Expr::Let(mut l) => {
                *l.expr = self.place(take(&mut l.expr));
                self.declare(analysis::bindings(&l.pat));
                Expr::Let(l)
            }
            Expr::Binary(mut b) if matches!(b.op, BinOp::And(_)) => {
                *b.left = self.let_cond(take(&mut b.left));
                *b.right = self.let_cond(take(&mut b.right));
                Expr::Binary(b)
            }
            Expr::Group(mut g) => {
                *g.expr = self.let_cond(take(&mut g.expr));
                Expr::Group(g)
            }
            other => self.expr(other, Pos::Value),
        }
    }

    fn push_loop(&mut self, label: Option<Lifetime>, state: &[Ident]) {
        self.loops.push(LoopFrame {
            label,
            state: state.to_vec(),
            scope_mark: self.scopes.len(),
        });
    }

    /// The closure of a loop body: rebinds the state, runs the body, returns the next state
    /// (unless the body always exits).
    fn body_closure(
        state: &[Ident],
        params: TokenStream,
        prelude: TokenStream,
        body: Block,
    ) -> TokenStream {
        if analysis::block_diverges(&body) {
            return quote!(|#params| { #prelude #body });
        }
        let tuple = state::tuple(state);
        quote!(|#params| { #prelude #body ::nacre::cf::Flow::Next(#tuple) })
    }

    /// `while c { B }`.
    fn while_loop(&mut self, w: syn::ExprWhile) -> Expr {
        let span = w.while_token.span;
        if self.blocked(span, "`while`") {
            return Expr::While(w);
        }
        let syn::ExprWhile {
            attrs,
            label,
            cond,
            body,
            ..
        } = w;
        if has_let(&cond) {
            self.error(Error::new(
                span,
                "`#[jit]` does not support `let` chains in `while` conditions; use `while let` \
                 with one pattern and test the rest inside the body",
            ));
        }
        for v in analysis::assigned_in_expr(&cond) {
            self.error(Error::new(
                v.span(),
                format!("`#[jit]` does not support assigning `{v}` in a `while` condition; assign it in the loop body"),
            ));
        }
        let state = analysis::assigned_in_body(Vec::new(), &body);
        let used = analysis::idents(cond.to_token_stream());
        let cond = unparen(self.with_barrier("a `while` condition", |s| s.expr(*cond, Pos::Value)));
        self.push_loop(label.map(|l| l.name), &state);
        let body = self.block(body, Pos::Stmt);
        self.loops.pop();
        let cond_pat = state::pattern(&state, |v| {
            if used.contains(&v.to_string()) {
                Bind::Plain
            } else {
                Bind::Ignore
            }
        });
        let body_c = Self::body_closure(
            &state,
            state::pattern(&state, |_| Bind::Mut),
            quote!(),
            body,
        );
        let f = quote_spanned!(span=> ::nacre::cf::while_loop);
        let input = state::input(&state);
        let arms = self.exit_arms(&state, Output::State);
        let call = quote_spanned!(span=> #f(#input, |#cond_pat| #cond, #body_c));
        let call = named_call("while", &state, span, call);
        Expr::Verbatim(quote! {
            #(#attrs)*
            match #call { #arms }
        })
    }

    /// `while let P = e { B }`: a native loop that breaks when the pattern does not match.
    /// `w` is the loop with its condition taken out; `l` is that condition.
    fn while_let(&mut self, mut w: syn::ExprWhile, l: syn::ExprLet) -> Expr {
        let span = w.while_token.span;
        if self.blocked(span, "`while let`") {
            *w.cond = Expr::Let(l);
            return Expr::While(w);
        }
        let syn::ExprWhile {
            attrs, label, body, ..
        } = w;
        let binds = analysis::bindings(&l.pat);
        let mut state = analysis::assigned_in_expr(&l.expr);
        for v in analysis::assigned_in_body(binds.clone(), &body) {
            if !state.contains(&v) {
                state.push(v);
            }
        }
        self.push_loop(label.map(|l| l.name), &state);
        let scrutinee = self.place(*l.expr).into_token_stream();
        let scrutinee = if ends_with_brace(&scrutinee) {
            quote!((#scrutinee))
        } else {
            scrutinee
        };
        self.scopes.push(binds);
        let body = self.block(body, Pos::Stmt);
        self.scopes.pop();
        self.loops.pop();
        let tuple = state::tuple(&state);
        let pat = &l.pat;
        let prelude = quote_spanned! {span=>
            let #pat = #scrutinee else { return ::nacre::cf::brk(0usize, #tuple); };
        };
        let body_c =
            Self::body_closure(&state, state::pattern(&state, |_| Bind::Mut), prelude, body);
        let f = quote_spanned!(span=> ::nacre::cf::while_loop);
        let input = state::input(&state);
        let arms = self.exit_arms(&state, Output::State);
        let call = quote_spanned!(span=> #f(#input, |_| true, #body_c));
        let call = named_call("while", &state, span, call);
        Expr::Verbatim(quote! {
            #(#attrs)*
            match #call { #arms }
        })
    }

    /// `loop { B }`. Without a `break` out of it, the loop is an expression of type `!`.
    fn loop_(&mut self, l: syn::ExprLoop) -> Expr {
        let span = l.loop_token.span;
        if self.blocked(span, "`loop`") {
            return Expr::Loop(l);
        }
        let syn::ExprLoop {
            attrs, label, body, ..
        } = l;
        let breaks = analysis::has_break(&body, label.as_ref().map(|l| &l.name.ident));
        let state = analysis::assigned_in_body(Vec::new(), &body);
        self.push_loop(label.map(|l| l.name), &state);
        let body = self.block(body, Pos::Stmt);
        self.loops.pop();
        let body_c = Self::body_closure(
            &state,
            state::pattern(&state, |_| Bind::Mut),
            quote!(),
            body,
        );
        let f = quote_spanned!(span=> ::nacre::cf::loop_);
        let input = state::input(&state);
        let call = quote_spanned!(span=> #f(#input, #body_c));
        let call = named_call("loop", &state, span, call);
        let arms = self.exit_arms(&state, Output::State);
        Expr::Verbatim(if breaks {
            quote!(#(#attrs)* match #call { #arms })
        } else {
            // Only an exit leaves it; the write-back keeps the state's assignments visible.
            quote!(#(#attrs)* { match #call { #arms } return ::nacre::cf::Flow::Exit; })
        })
    }

    /// The iterator of a `for` loop: range literals become `cf::range`s (traced when a bound
    /// is a `Val`), also under `.step_by(..)`; anything else iterates natively.
    fn for_iter(&mut self, e: Expr) -> Expr {
        let e = match self.range(e) {
            Ranged::Range(range) => return range,
            Ranged::Other(e) => e,
        };
        match e {
            Expr::MethodCall(mut m) if m.method == "step_by" && m.turbofish.is_none() => {
                match self.range(take(&mut m.receiver)) {
                    Ranged::Range(range) => {
                        *m.receiver = range;
                        self.exprs(m.args.iter_mut());
                        Expr::MethodCall(m)
                    }
                    Ranged::Other(receiver) => {
                        *m.receiver = receiver;
                        self.expr(Expr::MethodCall(m), Pos::Value)
                    }
                }
            }
            e => self.expr(e, Pos::Value),
        }
    }

    /// `a..b` / `a..=b` (possibly parenthesised) → `cf::range(a, b)` /
    /// `cf::range_inclusive(a, b)`; any other expression is given back unchanged.
    fn range(&mut self, e: Expr) -> Ranged {
        match e {
            Expr::Range(syn::ExprRange {
                start: Some(start),
                end: Some(end),
                limits,
                ..
            }) => {
                let span = limits.span();
                let f = match limits {
                    syn::RangeLimits::HalfOpen(_) => quote_spanned!(span=> ::nacre::cf::range),
                    syn::RangeLimits::Closed(_) => {
                        quote_spanned!(span=> ::nacre::cf::range_inclusive)
                    }
                };
                let start = unparen(self.expr(*start, Pos::Value));
                let end = unparen(self.expr(*end, Pos::Value));
                Ranged::Range(Expr::Verbatim(quote!(#f(#start, #end))))
            }
            Expr::Paren(p) => match self.range(*p.expr) {
                Ranged::Other(inner) => Ranged::Other(Expr::Paren(syn::ExprParen {
                    attrs: p.attrs,
                    paren_token: p.paren_token,
                    expr: Box::new(inner),
                })),
                range => range,
            },
            Expr::Group(g) => match self.range(*g.expr) {
                Ranged::Other(inner) => Ranged::Other(Expr::Group(syn::ExprGroup {
                    attrs: g.attrs,
                    group_token: g.group_token,
                    expr: Box::new(inner),
                })),
                range => range,
            },
            other => Ranged::Other(other),
        }
    }

    /// `for P in e { B }`.
    fn for_loop(&mut self, f: syn::ExprForLoop) -> Expr {
        let span = f.for_token.span;
        if self.blocked(span, "`for`") {
            return Expr::ForLoop(f);
        }
        let syn::ExprForLoop {
            attrs,
            label,
            pat,
            expr,
            body,
            ..
        } = f;
        let binds = analysis::bindings(&pat);
        let state = analysis::assigned_in_body(binds.clone(), &body);
        let iter = unparen(self.for_iter(*expr));
        self.push_loop(label.map(|l| l.name), &state);
        self.scopes.push(binds);
        let body = self.block(body, Pos::Stmt);
        self.scopes.pop();
        self.loops.pop();
        let pat = match *pat {
            Pat::Or(o) => quote!((#o)),
            p => p.into_token_stream(),
        };
        let state_pat = state::pattern(&state, |_| Bind::Mut);
        let body_c = Self::body_closure(&state, quote!(#pat, #state_pat), quote!(), body);
        let f = quote_spanned!(span=> ::nacre::cf::for_loop);
        let input = state::input(&state);
        let arms = self.exit_arms(&state, Output::State);
        let call = quote_spanned!(span=> #f(#iter, #input, #body_c));
        let call = named_call("for", &state, span, call);
        Expr::Verbatim(quote! {
            #(#attrs)*
            match #call { #arms }
        })
    }

    /// The loop a `break`/`continue` targets, as an index into `loops`.
    fn target(&mut self, label: Option<&Lifetime>, span: Span, what: &str) -> Option<usize> {
        let found = match label {
            None => self.loops.len().checked_sub(1),
            Some(l) => self.loops.iter().rposition(|f| {
                f.label
                    .as_ref()
                    .is_some_and(|fl| analysis::same_label(fl, l))
            }),
        };
        let Some(i) = found else {
            let msg = match label {
                None => format!("`{what}` outside of a loop"),
                Some(l) => format!("use of undeclared label `{l}`"),
            };
            self.error(Error::new(span, msg));
            return None;
        };
        // The exit carries the target loop's state by name: a `let` between the loop and
        // here that shadows one of its variables would carry the wrong one.
        let frame = &self.loops[i];
        let shadowed = frame
            .state
            .iter()
            .find(|v| {
                self.scopes[frame.scope_mark.min(self.scopes.len())..]
                    .iter()
                    .any(|s| s.contains(v))
            })
            .cloned();
        if let Some(v) = shadowed {
            self.error(Error::new(
                span,
                format!(
                    "`#[jit]` cannot `{what}` here: the loop's variable `{v}` is shadowed by a \
                     `let` inside the loop; rename the inner variable"
                ),
            ));
            return None;
        }
        Some(i)
    }

    fn exit(&mut self, label: Option<&Lifetime>, span: Span, what: &str, f: &str) -> Option<Expr> {
        if self.blocked(span, &format!("`{what}`")) {
            return None;
        }
        let i = self.target(label, span, what)?;
        let depth = Literal::usize_suffixed(self.loops.len() - 1 - i);
        let tuple = state::tuple(&self.loops[i].state);
        let f = Ident::new(f, span);
        Some(Expr::Verbatim(
            quote_spanned!(span=> return ::nacre::cf::#f(#depth, #tuple)),
        ))
    }

    fn break_(&mut self, b: syn::ExprBreak) -> Expr {
        let span = b.break_token.span;
        if b.expr.is_some() {
            self.error(Error::new_spanned(
                &b,
                "`#[jit]` does not support `break` with a value; assign the value to a variable \
                 declared before the loop",
            ));
            return Expr::Break(b);
        }
        self.exit(b.label.as_ref(), span, "break", "brk")
            .unwrap_or(Expr::Break(b))
    }

    fn continue_(&mut self, c: syn::ExprContinue) -> Expr {
        let span = c.continue_token.span;
        self.exit(c.label.as_ref(), span, "continue", "cont")
            .unwrap_or(Expr::Continue(c))
    }

    /// `return e` → `return cf::ret::<R, _>(e)`.
    fn return_(&mut self, r: syn::ExprReturn) -> Expr {
        let span = r.return_token.span;
        if self.blocked(span, "`return`") {
            return Expr::Return(r);
        }
        let value = match r.expr {
            Some(e) if self.ret.is_some() => unparen(self.expr(*e, Pos::Tail)).into_token_stream(),
            Some(e) => unparen(self.expr(*e, Pos::Value)).into_token_stream(),
            None => quote!(()),
        };
        let ty = match &self.ret {
            Some(t) => t.to_token_stream(),
            None => quote!(()),
        };
        let f = quote_spanned!(span=> ::nacre::cf::ret::<#ty, _>);
        Expr::Verbatim(quote_spanned!(span=> return #f(#value)))
    }

    fn binary(&mut self, mut b: syn::ExprBinary) -> Expr {
        let span = b.op.span();
        if let Some(name) = comparison(&b.op) {
            let l = self.expr(*b.left, Pos::Value);
            let r = self.expr(*b.right, Pos::Value);
            let f = Ident::new(name, span);
            let path = quote_spanned!(span=> ::nacre::cf::#f);
            let (l, r) = (borrowed(l), borrowed(r));
            let attrs = &b.attrs;
            return Expr::Verbatim(quote_spanned!(span=> #(#attrs)* #path(#l, #r)));
        }
        let logic = match b.op {
            BinOp::And(_) => Some(("and", "the right operand of `&&`")),
            BinOp::Or(_) => Some(("or", "the right operand of `||`")),
            _ => None,
        };
        if let Some((name, place)) = logic {
            let l = unparen(self.expr(*b.left, Pos::Value));
            let r = unparen(self.with_barrier(place, |s| s.expr(*b.right, Pos::Value)));
            let f = Ident::new(name, span);
            let path = quote_spanned!(span=> ::nacre::cf::#f);
            let attrs = &b.attrs;
            return Expr::Verbatim(quote!(#(#attrs)* #path(#l, || #r)));
        }
        if analysis::is_compound_assign(&b.op) {
            if let Expr::Index(i) = *b.left {
                let value = unparen(self.expr(*b.right, Pos::Value));
                let op = compound_base(&b.op);
                return self.index_update(i, op, value, b.attrs);
            }
            *b.left = self.place(take(&mut b.left));
        } else {
            *b.left = self.expr(take(&mut b.left), Pos::Value);
        }
        *b.right = self.expr(take(&mut b.right), Pos::Value);
        Expr::Binary(b)
    }

    fn assign(&mut self, mut a: syn::ExprAssign) -> Expr {
        if let Expr::Index(i) = *a.left {
            let base = self.place(*i.expr);
            let index = unparen(self.expr(*i.index, Pos::Value));
            let value = unparen(self.expr(*a.right, Pos::Value));
            self.index_write = true;
            let m = Ident::new("nacre_index_set", i.bracket_token.span.join());
            let base = operand(base);
            let attrs = &a.attrs;
            return Expr::Verbatim(quote!(#(#attrs)* #base.#m(#index, #value)));
        }
        *a.left = self.place(take(&mut a.left));
        *a.right = self.expr(take(&mut a.right), Pos::Value);
        Expr::Assign(a)
    }

    /// `a[i]` in value position: `a.nacre_index(i)` (a `Ptr` load or a copy out of a Rust
    /// container, chosen by the imported traits).
    fn index_read(&mut self, i: syn::ExprIndex) -> Expr {
        let base = self.place(*i.expr);
        let index = unparen(self.expr(*i.index, Pos::Value));
        self.index_read = true;
        let m = Ident::new("nacre_index", i.bracket_token.span.join());
        let base = operand(base);
        let attrs = &i.attrs;
        Expr::Verbatim(quote!(#(#attrs)* #base.#m(#index)))
    }

    /// `a[i] op= v`: evaluates `i` and `v` once, reads, applies `op`, writes.
    fn index_update(
        &mut self,
        i: syn::ExprIndex,
        op: TokenStream,
        value: Expr,
        attrs: Vec<syn::Attribute>,
    ) -> Expr {
        let base = self.place(*i.expr);
        let index = unparen(self.expr(*i.index, Pos::Value));
        self.index_read = true;
        self.index_write = true;
        let span = i.bracket_token.span.join();
        let (get, set) = (
            Ident::new("nacre_index", span),
            Ident::new("nacre_index_set", span),
        );
        let (ti, tv) = (tmp("__nacre_i"), tmp("__nacre_v"));
        let base = operand(base);
        Expr::Verbatim(quote! {
            #(#attrs)*
            {
                let #ti = #index;
                let #tv = #value;
                let #tv = #base.#get(#ti) #op #tv;
                #base.#set(#ti, #tv);
            }
        })
    }
}
