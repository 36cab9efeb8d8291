//! Function bodies without `goto`, for dialects with
//! [`Dialect::structured_control_flow`](crate::Dialect::structured_control_flow).
//!
//! The body is the structured form of [`nacre_kernel::structure_simplified`], printed as:
//!
//! - a loop: `for (;;) { ... }` followed by the code of its exit, with the dialect's loop guard
//!   ([`Dialect::loop_guard`](crate::Dialect::loop_guard)) declared before it and checked at
//!   the top of every iteration;
//! - a labelled region: `do { ... } while (0);`, followed by the code of the block after it;
//! - a branch: `if (cond) { ... } else { ... }` (an empty arm is left out, the condition
//!   negated when it is the `then` arm);
//! - an edge: the target's parameter assignments, as for a jump;
//! - a break of the innermost region or loop, or a continue of the innermost loop, as C's
//!   `break` and `continue`. A transfer to an outer region or loop (a labelled break, or a continue from
//!   inside a region, where C's `continue` would only reach the `while (0)`) stores the
//!   target's number in `nacre_exit` and breaks out of the innermost construct; after every
//!   construct that such a transfer leaves, `if (nacre_exit == N)` passes it on outwards,
//!   and the target's own construct clears it and breaks or continues.

use super::{line, FunctionPrinter};
use crate::dialect::Dialect;
use nacre_backend::BackendError;
use nacre_ir::{Block, InstKind, Scalar};
use nacre_kernel::{structure_simplified, Stmt, StructureError};

/// A transfer of structured control flow.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Target {
    /// To the code of the block after the region or loop it labels.
    Break(Block),
    /// To the next iteration of the loop headed by the block.
    Continue(Block),
}

/// A construct that C's `break` (and, for loops, `continue`) reaches.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Construct {
    /// `for (;;)`: the loop headed by `header`, followed by the code of `exit`.
    Loop { header: Block, exit: Option<Block> },
    /// `do { } while (0)`, followed by the code of the block.
    Region(Block),
}

impl Construct {
    /// The C statement that performs `t` when this is the innermost construct, if any.
    fn performs(self, t: Target) -> Option<&'static str> {
        match (self, t) {
            (Construct::Region(f), Target::Break(b)) if f == b => Some("break;"),
            (Construct::Loop { exit: Some(e), .. }, Target::Break(b)) if e == b => Some("break;"),
            (Construct::Loop { header, .. }, Target::Continue(h)) if header == h => {
                Some("continue;")
            }
            _ => None,
        }
    }
}

/// The state of printing one body.
#[derive(Default)]
struct Render {
    out: String,
    /// The constructs around the statement being printed, innermost last, with the flagged
    /// transfers that leave each one.
    stack: Vec<(Construct, Vec<Target>)>,
    /// The number of each flagged transfer (its index plus one).
    exits: Vec<Target>,
    /// Loops printed so far (names their guards).
    loops: usize,
}

impl Render {
    fn exit_id(&mut self, t: Target) -> usize {
        match self.exits.iter().position(|&e| e == t) {
            Some(i) => i + 1,
            None => {
                self.exits.push(t);
                self.exits.len()
            }
        }
    }
}

/// Prefixes every line of `text` (printed at indentation 1) with `extra` more levels.
fn reindent(out: &mut String, text: &str, indent: usize) {
    for l in text.lines() {
        for _ in 1..indent {
            out.push_str("    ");
        }
        out.push_str(l);
        out.push('\n');
    }
}

impl<D: Dialect + ?Sized> FunctionPrinter<'_, '_, D> {
    /// The statements of the function body in structured form.
    pub(super) fn structured_body(&mut self) -> Result<String, BackendError> {
        let tree = structure_simplified(self.func).map_err(|e| match e {
            // The verifier rules out what `Malformed` reports: a bug if it comes.
            StructureError::Malformed { .. } => self.internal(e),
            other => self.ctx.unsupported(other.to_string()),
        })?;
        let mut r = Render::default();
        self.stmts(&mut r, &tree, 1)?;
        if r.exits.is_empty() {
            return Ok(r.out);
        }
        let mut out = String::new();
        line(
            &mut out,
            1,
            format_args!("{} nacre_exit = 0;", self.scalar_type(Scalar::U32)),
        );
        out.push_str(&r.out);
        Ok(out)
    }

    fn stmts(&mut self, r: &mut Render, seq: &[Stmt], indent: usize) -> Result<(), BackendError> {
        for s in seq {
            self.stmt(r, s, indent)?;
        }
        Ok(())
    }

    fn stmt(&mut self, r: &mut Render, s: &Stmt, indent: usize) -> Result<(), BackendError> {
        match s {
            Stmt::Code(block) => {
                let insts = self.func.blocks[*block].insts.clone();
                let body = insts.split_last().map_or(&[][..], |(_, rest)| rest);
                let mut text = String::new();
                for &inst in body {
                    self.inst(&mut text, inst, None)?;
                }
                reindent(&mut r.out, &text, indent);
            }
            Stmt::Edge { from, slot } => {
                let dest = self
                    .func
                    .terminator(*from)
                    .and_then(|t| self.func.insts[t].kind.successors().nth(*slot as usize))
                    .cloned()
                    .ok_or_else(|| self.internal(format_args!("{from} has no successor {slot}")))?;
                if self.lanes.as_ref().is_some_and(|p| p.entry() == *from) {
                    let mut text = String::new();
                    self.lane_prelude(&mut text)?;
                    reindent(&mut r.out, &text, indent);
                }
                let (lines, temps) = self.moves(&dest)?;
                let inner = if temps {
                    line(&mut r.out, indent, "{");
                    indent + 1
                } else {
                    indent
                };
                for l in &lines {
                    line(&mut r.out, inner, l);
                }
                if temps {
                    line(&mut r.out, indent, "}");
                }
            }
            Stmt::If { from, then, els } => {
                let cond = match self
                    .func
                    .terminator(*from)
                    .map(|t| &self.func.insts[t].kind)
                {
                    Some(InstKind::Branch { cond, .. }) => *cond,
                    _ => return Err(self.internal(format_args!("{from} does not end in a branch"))),
                };
                let (test, first, second) = if then.is_empty() {
                    (format!("!{cond}"), els, then)
                } else {
                    (cond.to_string(), then, els)
                };
                line(&mut r.out, indent, format_args!("if ({test}) {{"));
                self.stmts(r, first, indent + 1)?;
                if second.is_empty() {
                    line(&mut r.out, indent, "}");
                } else {
                    line(&mut r.out, indent, "} else {");
                    self.stmts(r, second, indent + 1)?;
                    line(&mut r.out, indent, "}");
                }
            }
            Stmt::Loop { header, exit, body } => {
                let name = format!("nacre_guard{}", r.loops);
                r.loops += 1;
                let guard = self.ctx.dialect.loop_guard(&name);
                if let Some(g) = &guard {
                    line(&mut r.out, indent, &g.declaration);
                }
                line(&mut r.out, indent, "for (;;) {");
                if let Some(g) = &guard {
                    line(
                        &mut r.out,
                        indent + 1,
                        format_args!("if ({}) {}", g.exhausted, self.trap_return),
                    );
                    line(&mut r.out, indent + 1, &g.step);
                }
                let c = Construct::Loop {
                    header: *header,
                    exit: *exit,
                };
                self.construct(r, c, body, indent)?;
                line(&mut r.out, indent, "}");
                self.dispatch(r, indent)?;
            }
            Stmt::Labeled { follow, body } => {
                line(&mut r.out, indent, "do {");
                self.construct(r, Construct::Region(*follow), body, indent)?;
                line(&mut r.out, indent, "} while (0);");
                self.dispatch(r, indent)?;
            }
            Stmt::Break(follow) => self.transfer(r, Target::Break(*follow), indent, false)?,
            Stmt::Continue(header) => self.transfer(r, Target::Continue(*header), indent, false)?,
            Stmt::Return(block) => {
                let term = self
                    .func
                    .terminator(*block)
                    .ok_or_else(|| self.internal(format_args!("{block} has no terminator")))?;
                let mut text = String::new();
                self.inst(&mut text, term, None)?;
                reindent(&mut r.out, &text, indent);
            }
        }
        Ok(())
    }

    /// Prints the body of a loop or region with the construct on the stack; leaves the
    /// construct's pending flagged targets on `r.stack`'s popped entry for [`Self::dispatch`].
    fn construct(
        &mut self,
        r: &mut Render,
        construct: Construct,
        body: &[Stmt],
        indent: usize,
    ) -> Result<(), BackendError> {
        r.stack.push((construct, Vec::new()));
        self.stmts(r, body, indent + 1)?;
        let (_, pending) = r
            .stack
            .pop()
            .ok_or_else(|| self.internal("unbalanced structured constructs"))?;
        r.stack.push((construct, pending));
        Ok(())
    }

    /// After a construct: passes on the flagged transfers that left it.
    fn dispatch(&mut self, r: &mut Render, indent: usize) -> Result<(), BackendError> {
        let (_, pending) = r
            .stack
            .pop()
            .ok_or_else(|| self.internal("unbalanced structured constructs"))?;
        for t in pending {
            let id = r.exit_id(t);
            line(
                &mut r.out,
                indent,
                format_args!("if (nacre_exit == {id}) {{"),
            );
            self.transfer(r, t, indent + 1, true)?;
            line(&mut r.out, indent, "}");
        }
        Ok(())
    }

    /// A transfer to `t` from inside the constructs on the stack; `relayed` when it passes
    /// on a flagged transfer (after a construct it left), so `nacre_exit` is already set.
    fn transfer(
        &mut self,
        r: &mut Render,
        t: Target,
        indent: usize,
        relayed: bool,
    ) -> Result<(), BackendError> {
        if !r.stack.iter().any(|(c, _)| c.performs(t).is_some()) {
            return Err(self.internal(format_args!("a transfer {t:?} outside its construct")));
        }
        let reset = if relayed { "nacre_exit = 0; " } else { "" };
        let text = match r.stack.last().and_then(|(c, _)| c.performs(t)) {
            Some(statement) => format!("{reset}{statement}"),
            None => {
                let id = r.exit_id(t);
                if let Some((_, pending)) = r.stack.last_mut() {
                    if !pending.contains(&t) {
                        pending.push(t);
                    }
                }
                if relayed {
                    "break;".to_string()
                } else {
                    format!("nacre_exit = {id}; break;")
                }
            }
        };
        line(&mut r.out, indent, text);
        Ok(())
    }
}
