//! Syntactic analyses over the user's code: which outer variables a construct assigns (its
//! *state*), which names a pattern binds, whether an expression diverges, whether a `loop` can
//! be left by `break`.
//!
//! The assigned-variable analysis follows Rust's scoping: a `let` shadows from the next
//! statement to the end of its block; closure parameters, `for` patterns, `match` arms and
//! `if let` / `while let` patterns shadow in their bodies. An assignment (`x = ..`,
//! `x += ..`, destructuring `(a, b) = ..`, a field `x.f = ..`) to a name that is not
//! declared inside the construct at that point assigns an outer variable. Assignments inside
//! user closures count (the closure runs inside the construct); nested items do not. The
//! result lists each variable once, in order of first assignment, with the span of that
//! assignment.

use proc_macro2::{Ident, TokenStream, TokenTree};
use std::collections::HashSet;
use syn::visit::{self, Visit};
use syn::{Block, Expr, ExprClosure, ExprForLoop, ExprIf, ExprWhile, Lifetime, Pat};

/// Collects outer variables assigned in the visited code.
struct Assigned {
    /// Names declared inside the construct, innermost scope last.
    scopes: Vec<Vec<Ident>>,
    /// The assigned outer variables, in order of first assignment.
    out: Vec<Ident>,
}

impl Assigned {
    fn new(declared: Vec<Ident>) -> Assigned {
        Assigned {
            scopes: vec![declared],
            out: Vec::new(),
        }
    }

    fn declared(&self, name: &Ident) -> bool {
        self.scopes.iter().any(|s| s.contains(name))
    }

    fn declare(&mut self, names: Vec<Ident>) {
        self.scopes
            .last_mut()
            .expect("a scope is open")
            .extend(names);
    }

    fn assign(&mut self, name: &Ident) {
        if name != "self" && !self.declared(name) && !self.out.contains(name) {
            self.out.push(name.clone());
        }
    }

    /// Records the variables assigned by an assignee expression (the left of `=` or `op=`).
    fn assignee(&mut self, e: &Expr) {
        match e {
            Expr::Path(p) if p.qself.is_none() => {
                if let Some(id) = p.path.get_ident() {
                    self.assign(id);
                }
            }
            Expr::Tuple(t) => t.elems.iter().for_each(|e| self.assignee(e)),
            Expr::Array(a) => a.elems.iter().for_each(|e| self.assignee(e)),
            Expr::Paren(p) => self.assignee(&p.expr),
            Expr::Group(g) => self.assignee(&g.expr),
            Expr::Call(c) => c.args.iter().for_each(|e| self.assignee(e)),
            Expr::Struct(s) => {
                s.fields.iter().for_each(|f| self.assignee(&f.expr));
                if let Some(rest) = &s.rest {
                    self.visit_expr(rest);
                }
            }
            // `x.f = ..` changes `x`: the whole variable is state.
            Expr::Field(f) => {
                let mut base = &*f.base;
                loop {
                    match base {
                        Expr::Field(inner) => base = &inner.base,
                        Expr::Paren(p) => base = &p.expr,
                        Expr::Group(g) => base = &g.expr,
                        _ => break,
                    }
                }
                match base {
                    Expr::Path(_) => self.assignee(base),
                    other => self.visit_expr(other),
                }
            }
            // `_` and the `..` of slice destructuring assign nothing.
            Expr::Infer(_) => {}
            Expr::Range(r) if r.start.is_none() && r.end.is_none() => {}
            // `a[i] = ..` and `*r = ..` write through a container or reference: no variable
            // is assigned (pointer stores are recorded as memory operations).
            other => self.visit_expr(other),
        }
    }
}

impl<'ast> Visit<'ast> for Assigned {
    fn visit_block(&mut self, b: &'ast Block) {
        self.scopes.push(Vec::new());
        visit::visit_block(self, b);
        self.scopes.pop();
    }

    fn visit_local(&mut self, l: &'ast syn::Local) {
        if let Some(init) = &l.init {
            self.visit_expr(&init.expr);
            if let Some((_, e)) = &init.diverge {
                self.visit_expr(e);
            }
        }
        self.declare(bindings(&l.pat));
    }

    fn visit_item(&mut self, _: &'ast syn::Item) {}

    fn visit_expr_assign(&mut self, a: &'ast syn::ExprAssign) {
        self.assignee(&a.left);
        self.visit_expr(&a.right);
    }

    fn visit_expr_binary(&mut self, b: &'ast syn::ExprBinary) {
        if is_compound_assign(&b.op) {
            self.assignee(&b.left);
        } else {
            self.visit_expr(&b.left);
        }
        self.visit_expr(&b.right);
    }

    fn visit_expr_if(&mut self, i: &'ast ExprIf) {
        // Bindings of `if let` are in scope in the `then` block only.
        self.scopes.push(Vec::new());
        self.visit_expr(&i.cond);
        self.visit_block(&i.then_branch);
        self.scopes.pop();
        if let Some((_, e)) = &i.else_branch {
            self.visit_expr(e);
        }
    }

    fn visit_expr_let(&mut self, l: &'ast syn::ExprLet) {
        self.visit_expr(&l.expr);
        self.declare(bindings(&l.pat));
    }

    fn visit_expr_while(&mut self, w: &'ast ExprWhile) {
        self.scopes.push(Vec::new());
        self.visit_expr(&w.cond);
        self.visit_block(&w.body);
        self.scopes.pop();
    }

    fn visit_expr_for_loop(&mut self, f: &'ast ExprForLoop) {
        self.visit_expr(&f.expr);
        self.scopes.push(bindings(&f.pat));
        self.visit_block(&f.body);
        self.scopes.pop();
    }

    fn visit_arm(&mut self, a: &'ast syn::Arm) {
        self.scopes.push(bindings(&a.pat));
        if let Some((_, g)) = &a.guard {
            self.visit_expr(g);
        }
        self.visit_expr(&a.body);
        self.scopes.pop();
    }

    fn visit_expr_closure(&mut self, c: &'ast ExprClosure) {
        self.scopes
            .push(c.inputs.iter().flat_map(bindings).collect());
        self.visit_expr(&c.body);
        self.scopes.pop();
    }
}

/// Whether `op` is a compound assignment (`+=`, `<<=`, ...).
pub(crate) fn is_compound_assign(op: &syn::BinOp) -> bool {
    use syn::BinOp::*;
    matches!(
        op,
        AddAssign(_)
            | SubAssign(_)
            | MulAssign(_)
            | DivAssign(_)
            | RemAssign(_)
            | BitXorAssign(_)
            | BitAndAssign(_)
            | BitOrAssign(_)
            | ShlAssign(_)
            | ShrAssign(_)
    )
}

/// Outer variables assigned in a block, in order of first assignment.
pub(crate) fn assigned_in_block(b: &Block) -> Vec<Ident> {
    let mut a = Assigned::new(Vec::new());
    a.visit_block(b);
    a.out
}

/// Outer variables assigned in an expression, in order of first assignment.
pub(crate) fn assigned_in_expr(e: &Expr) -> Vec<Ident> {
    let mut a = Assigned::new(Vec::new());
    a.visit_expr(e);
    a.out
}

/// Outer variables assigned in the branches of an `if` (its condition runs before it).
pub(crate) fn assigned_in_branches(then: &Block, els: Option<&Expr>) -> Vec<Ident> {
    let mut a = Assigned::new(Vec::new());
    a.visit_block(then);
    if let Some(e) = els {
        a.visit_expr(e);
    }
    a.out
}

/// Outer variables assigned in a loop body where `declared` (the loop pattern's bindings) are
/// in scope.
pub(crate) fn assigned_in_body(declared: Vec<Ident>, body: &Block) -> Vec<Ident> {
    let mut a = Assigned::new(declared);
    a.visit_block(body);
    a.out
}

/// The names a pattern binds.
pub(crate) fn bindings(p: &Pat) -> Vec<Ident> {
    struct Binds(Vec<Ident>);
    impl<'ast> Visit<'ast> for Binds {
        fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
            self.0.push(p.ident.clone());
            visit::visit_pat_ident(self, p);
        }
        // Constants and ranges in patterns bind nothing.
        fn visit_expr(&mut self, _: &'ast Expr) {}
    }
    let mut b = Binds(Vec::new());
    b.visit_pat(p);
    b.0
}

/// Whether an expression syntactically never finishes normally: `return`, `break`,
/// `continue`, a `loop` without a `break` out of it, a panicking macro, or a block that ends
/// with one of these.
pub(crate) fn diverges(e: &Expr) -> bool {
    match e {
        Expr::Return(_) | Expr::Break(_) | Expr::Continue(_) => true,
        Expr::Loop(l) => !has_break(&l.body, l.label.as_ref().map(|l| &l.name.ident)),
        Expr::Paren(p) => diverges(&p.expr),
        Expr::Group(g) => diverges(&g.expr),
        Expr::Block(b) if b.label.is_none() => block_diverges(&b.block),
        Expr::Unsafe(u) => block_diverges(&u.block),
        Expr::Macro(m) => macro_diverges(&m.mac),
        _ => false,
    }
}

fn macro_diverges(m: &syn::Macro) -> bool {
    m.path.segments.last().is_some_and(|s| {
        ["panic", "unreachable", "todo", "unimplemented"]
            .iter()
            .any(|n| s.ident == n)
    })
}

/// Whether a block ends with a diverging statement or expression.
pub(crate) fn block_diverges(b: &Block) -> bool {
    b.stmts.last().is_some_and(stmt_diverges)
}

/// Whether a statement diverges (see [`diverges`]).
pub(crate) fn stmt_diverges(s: &syn::Stmt) -> bool {
    match s {
        syn::Stmt::Expr(e, _) => diverges(e),
        syn::Stmt::Macro(m) => macro_diverges(&m.mac),
        _ => false,
    }
}

/// Whether the body of a `loop` (labelled `label`) contains a `break` that leaves it.
pub(crate) fn has_break(body: &Block, label: Option<&Ident>) -> bool {
    struct Finder<'a> {
        label: Option<&'a Ident>,
        /// Loops entered inside the body.
        depth: usize,
        found: bool,
    }
    impl<'ast> Visit<'ast> for Finder<'_> {
        fn visit_expr_break(&mut self, b: &'ast syn::ExprBreak) {
            let hit = match &b.label {
                None => self.depth == 0,
                Some(l) => Some(&l.ident) == self.label,
            };
            self.found |= hit;
            visit::visit_expr_break(self, b);
        }
        fn visit_expr_loop(&mut self, l: &'ast syn::ExprLoop) {
            self.depth += 1;
            visit::visit_expr_loop(self, l);
            self.depth -= 1;
        }
        fn visit_expr_while(&mut self, w: &'ast ExprWhile) {
            self.visit_expr(&w.cond);
            self.depth += 1;
            self.visit_block(&w.body);
            self.depth -= 1;
        }
        fn visit_expr_for_loop(&mut self, f: &'ast ExprForLoop) {
            self.visit_expr(&f.expr);
            self.depth += 1;
            self.visit_block(&f.body);
            self.depth -= 1;
        }
        fn visit_expr_closure(&mut self, _: &'ast ExprClosure) {}
        fn visit_expr_async(&mut self, _: &'ast syn::ExprAsync) {}
        fn visit_item(&mut self, _: &'ast syn::Item) {}
    }
    let mut f = Finder {
        label,
        depth: 0,
        found: false,
    };
    f.visit_block(body);
    f.found
}

/// The names of all identifiers in a token stream (macro arguments included).
pub(crate) fn idents(tokens: TokenStream) -> HashSet<String> {
    fn walk(tokens: TokenStream, out: &mut HashSet<String>) {
        for t in tokens {
            match t {
                TokenTree::Ident(i) => {
                    out.insert(i.to_string());
                }
                TokenTree::Group(g) => walk(g.stream(), out),
                _ => {}
            }
        }
    }
    let mut out = HashSet::new();
    walk(tokens, &mut out);
    out
}

/// Whether a loop label matches `name` (`'outer`).
pub(crate) fn same_label(a: &Lifetime, b: &Lifetime) -> bool {
    a.ident == b.ident
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    fn names(v: Vec<Ident>) -> Vec<String> {
        v.into_iter().map(|i| i.to_string()).collect()
    }

    #[test]
    fn plain_and_compound_assignments_in_first_assignment_order() {
        let b: Block = parse_quote!({
            y += 1;
            x = y;
            y = 2;
            z *= x;
        });
        assert_eq!(names(assigned_in_block(&b)), ["y", "x", "z"]);
    }

    #[test]
    fn destructuring_assignments() {
        let b: Block = parse_quote!({
            (a, b) = (b, a);
            [c, _, ..] = arr;
            S { f: d, .. } = s;
            T(e, (f, _)) = t;
        });
        assert_eq!(names(assigned_in_block(&b)), ["a", "b", "c", "d", "e", "f"]);
    }

    #[test]
    fn field_assignment_assigns_the_variable_index_and_deref_do_not() {
        let b: Block = parse_quote!({
            p.x.y = 1;
            v[i] = 2;
            p2[j] += 3;
            *r = 4;
            self.count += 1;
        });
        assert_eq!(names(assigned_in_block(&b)), ["p"]);
    }

    #[test]
    fn let_shadows_until_the_end_of_its_block() {
        let b: Block = parse_quote!({
            x = 1;
            let x = 2;
            x = 3;
            {
                let y = 0;
                y = 1;
            }
            y = 5;
        });
        assert_eq!(names(assigned_in_block(&b)), ["x", "y"]);
    }

    #[test]
    fn let_initialiser_sees_the_outer_variable() {
        let b: Block = parse_quote!({
            let x = {
                x = 1;
                x
            };
            x = 2;
        });
        assert_eq!(names(assigned_in_block(&b)), ["x"]);
    }

    #[test]
    fn closure_params_loop_patterns_and_arms_shadow() {
        let b: Block = parse_quote!({
            let f = |a, (b, c): (i32, i32)| {
                a = 1;
                b = 2;
                d = 3;
            };
            for (i, j) in it {
                i = 0;
                k = j;
            }
            match m {
                Some(v) => v = 1,
                None => w = 2,
            }
            if let Some(q) = o {
                q = 1;
            } else {
                q = 2;
            }
            while let Some(r) = it.next() {
                r = 1;
            }
        });
        assert_eq!(names(assigned_in_block(&b)), ["d", "k", "w", "q"]);
    }

    #[test]
    fn nested_items_are_skipped_and_self_is_not_state() {
        let b: Block = parse_quote!({
            fn inner() {
                a = 1;
            }
            self = other;
            b = 2;
        });
        assert_eq!(names(assigned_in_block(&b)), ["b"]);
    }

    #[test]
    fn if_state_excludes_the_condition() {
        let e: ExprIf = parse_quote!(if {
            c = 1;
            c
        } > 0
        {
            a = 1
        } else if x {
            b = 2
        } else {
            a = 3
        });
        let els = e.else_branch.as_ref().map(|(_, e)| &**e);
        assert_eq!(names(assigned_in_branches(&e.then_branch, els)), ["a", "b"]);
    }

    #[test]
    fn loop_body_with_declared_pattern() {
        let body: Block = parse_quote!({
            i = i + 1;
            s = s + i;
        });
        let declared = vec![Ident::new("i", proc_macro2::Span::call_site())];
        assert_eq!(names(assigned_in_body(declared, &body)), ["s"]);
    }

    #[test]
    fn pattern_bindings() {
        let p: Pat = syn::parse_quote!((a, S { b, c: C(d), .. }, [e, rest @ ..], None, f @ 1..=3));
        assert_eq!(
            names(bindings(&p)),
            ["a", "b", "d", "e", "rest", "None", "f"]
        );
    }

    #[test]
    fn divergence() {
        assert!(diverges(&parse_quote!(return x)));
        assert!(diverges(&parse_quote!({
            foo();
            break;
        })));
        assert!(diverges(&parse_quote!(loop {
            if c {
                return 1;
            }
        })));
        assert!(!diverges(&parse_quote!(loop {
            if c {
                break;
            }
        })));
        assert!(!diverges(&parse_quote!('a: loop {
            loop {
                break 'a;
            }
        })));
        assert!(diverges(&parse_quote!(loop {
            loop {
                break;
            }
        })));
        assert!(diverges(&parse_quote!(panic!("no"))));
        assert!(!diverges(&parse_quote!(x + 1)));
    }
}
