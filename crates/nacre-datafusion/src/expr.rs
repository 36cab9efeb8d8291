//! Expressions of a pipeline: a small typed tree lowered from DataFusion's physical
//! expressions, with the columns of every operator between the scan and the aggregate
//! substituted, so that each node reads scanned columns only. Nodes are shared (`Arc`): an
//! expression a projection computes once and later operators read twice is one node, traced
//! once.

use crate::error::Decline;
use crate::types::ColType;
use datafusion::arrow::datatypes::Schema;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{
    BinaryExpr, CaseExpr, CastExpr, Column, InListExpr, IsNotNullExpr, IsNullExpr, LikeExpr,
    Literal, NotExpr,
};
use datafusion::physical_expr::PhysicalExpr;
use std::sync::Arc;

/// A constant.
#[derive(Clone, PartialEq, Debug)]
pub enum Lit {
    /// A boolean.
    Bool(bool),
    /// An integer of an integer type or a date (days).
    Int(i64),
    /// A decimal, scaled by its type's scale.
    Decimal(i128),
    /// A float.
    Float(f64),
    /// A string's bytes.
    Str(Vec<u8>),
}

/// Arithmetic operators.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum ArithOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` (floats only)
    Div,
}

/// Comparison operators: the IR's.
pub use nacre::ir::CmpOp;

/// A typed expression over the scanned columns.
#[derive(Clone, PartialEq, Debug)]
pub enum Expr {
    /// The `index`th scanned column.
    Column {
        /// Position among the pipeline's scanned columns.
        index: usize,
        /// Its type.
        ty: ColType,
    },
    /// A constant of a type.
    Literal {
        /// The value.
        value: Lit,
        /// Its type.
        ty: ColType,
    },
    /// Arithmetic, with Arrow's semantics for the result type `ty` (decimals rescaled to the
    /// larger scale for `+`/`-`, scales added for `*`; an overflow is an error).
    Arith {
        /// The operator.
        op: ArithOp,
        /// Left operand.
        left: Arc<Expr>,
        /// Right operand.
        right: Arc<Expr>,
        /// The result type.
        ty: ColType,
    },
    /// A comparison (operands of one kind: numbers, dates, or strings for `=`/`<>`).
    Compare {
        /// The operator.
        op: CmpOp,
        /// Left operand.
        left: Arc<Expr>,
        /// Right operand.
        right: Arc<Expr>,
    },
    /// `AND`.
    And(Arc<Expr>, Arc<Expr>),
    /// `OR`.
    Or(Arc<Expr>, Arc<Expr>),
    /// `NOT`.
    Not(Arc<Expr>),
    /// A conversion to `ty` with Arrow's cast semantics.
    Cast {
        /// The value.
        expr: Arc<Expr>,
        /// The target type.
        ty: ColType,
    },
    /// `expr IS NULL` (or `IS NOT NULL`); never null itself.
    IsNull {
        /// The value.
        expr: Arc<Expr>,
        /// `IS NOT NULL`.
        negated: bool,
    },
    /// `expr LIKE 'prefix%'` (or `NOT LIKE`), the prefix at most 12 bytes: up to 4 held in
    /// every string view; a longer one only of a column, which the host then gives as
    /// prefix views ([`Expr::long_prefix_columns`]).
    LikePrefix {
        /// The string.
        expr: Arc<Expr>,
        /// The bytes it must start with.
        prefix: Vec<u8>,
        /// `NOT LIKE`.
        negated: bool,
    },
    /// `CASE WHEN cond THEN then ELSE otherwise END`: `then` where `cond` is true (not
    /// NULL), else `otherwise`; each computed (and its overflow an error) only for the rows
    /// that take it, as DataFusion's `CASE`. A `CASE` of several `WHEN`s is a chain of these.
    If {
        /// The condition.
        cond: Arc<Expr>,
        /// The value where it holds.
        then: Arc<Expr>,
        /// The value elsewhere.
        otherwise: Arc<Expr>,
        /// The result type (both values have it).
        ty: ColType,
    },
}

impl Expr {
    /// Calls `f` on this node and every node below it.
    pub fn visit(&self, f: &mut impl FnMut(&Expr)) {
        f(self);
        match self {
            Expr::Column { .. } | Expr::Literal { .. } => {}
            Expr::Arith { left, right, .. }
            | Expr::Compare { left, right, .. }
            | Expr::And(left, right)
            | Expr::Or(left, right) => {
                left.visit(f);
                right.visit(f);
            }
            Expr::Not(e)
            | Expr::Cast { expr: e, .. }
            | Expr::LikePrefix { expr: e, .. }
            | Expr::IsNull { expr: e, .. } => e.visit(f),
            Expr::If {
                cond,
                then,
                otherwise,
                ..
            } => {
                cond.visit(f);
                then.visit(f);
                otherwise.visit(f);
            }
        }
    }

    /// Whether the expression can be SQL's NULL when the scanned columns `nullable` says can
    /// hold nulls: a column that can, and every operator of such an operand but `IS NULL`.
    pub fn may_be_null(&self, nullable: &[bool]) -> bool {
        match self {
            Expr::Column { index, .. } => nullable.get(*index).copied().unwrap_or(false),
            Expr::Literal { .. } | Expr::IsNull { .. } => false,
            Expr::Arith { left, right, .. }
            | Expr::Compare { left, right, .. }
            | Expr::And(left, right)
            | Expr::Or(left, right) => left.may_be_null(nullable) || right.may_be_null(nullable),
            Expr::Not(e) | Expr::Cast { expr: e, .. } | Expr::LikePrefix { expr: e, .. } => {
                e.may_be_null(nullable)
            }
            // The condition's NULL takes `otherwise`.
            Expr::If {
                then, otherwise, ..
            } => then.may_be_null(nullable) || otherwise.may_be_null(nullable),
        }
    }

    /// The expression's type.
    pub fn ty(&self) -> ColType {
        match self {
            Expr::Column { ty, .. }
            | Expr::Literal { ty, .. }
            | Expr::Arith { ty, .. }
            | Expr::If { ty, .. }
            | Expr::Cast { ty, .. } => *ty,
            Expr::Compare { .. }
            | Expr::And(..)
            | Expr::Or(..)
            | Expr::Not(_)
            | Expr::IsNull { .. }
            | Expr::LikePrefix { .. } => ColType::Boolean,
        }
    }
}

impl Expr {
    /// The columns this expression matches with a `LIKE` prefix longer than 4 bytes: the
    /// host gives them as prefix views, each string's length and first 12 bytes (a string
    /// view's words, but for a longer string its bytes 4 to 12 in place of where its data
    /// is), which tell every comparison pipelines make as views do.
    pub fn long_prefix_columns(&self, out: &mut Vec<usize>) {
        self.visit(&mut |e| {
            if let Expr::LikePrefix { expr, prefix, .. } = e {
                if let (Expr::Column { index, .. }, true) = (&**expr, prefix.len() > 4) {
                    out.push(*index);
                }
            }
        });
    }
}

/// The most decimal digits an `i128` holds in full (`10^38 - 1 < 2^127`).
pub const I128_DIGITS: u32 = 38;

fn digits_of(x: i128) -> u32 {
    x.unsigned_abs().checked_ilog10().map_or(1, |d| d + 1)
}

impl Expr {
    /// A bound on the decimal digits of the integer that holds a number (a decimal scaled by
    /// its scale): an integer column's type, a literal's own digits, and what arithmetic makes
    /// of its operands'. A decimal column's declared precision is not a bound (Arrow does not
    /// enforce it), so arithmetic on decimal columns is checked; arithmetic whose bound is at
    /// most [`I128_DIGITS`] cannot overflow and is not.
    pub fn digits(&self) -> u32 {
        match self {
            Expr::Column {
                ty: ColType::Decimal { .. },
                ..
            } => I128_DIGITS + 1,
            Expr::Column {
                ty: ColType::Int32 | ColType::Date32,
                ..
            } => 10,
            Expr::Column { .. } => 20,
            Expr::Literal {
                value: Lit::Decimal(x),
                ..
            } => digits_of(*x),
            Expr::Literal {
                value: Lit::Int(x),
                ty,
            } => digits_of(i128::from(*x)) + ty.scale().max(0) as u32,
            Expr::Arith {
                op,
                left,
                right,
                ty,
            } => {
                let up = |e: &Expr| e.digits() + (ty.scale() - e.ty().scale()).max(0) as u32;
                match op {
                    ArithOp::Mul => left.digits() + right.digits(),
                    _ => up(left).max(up(right)) + 1,
                }
            }
            Expr::Cast { expr, ty } => {
                let (d, shift) = (
                    expr.digits() as i32,
                    i32::from(ty.scale() - expr.ty().scale()),
                );
                // Rounding to fewer places can carry into one more digit.
                let d = if shift >= 0 {
                    d + shift
                } else {
                    (d + shift).max(0) + 1
                };
                d as u32
            }
            Expr::If {
                then, otherwise, ..
            } => then.digits().max(otherwise.digits()),
            _ => I128_DIGITS + 1,
        }
    }
}

/// What a column of an operator's input is: its expression over the scanned columns, or
/// `None` for a scanned column of a type pipelines do not read (booleans are bit-packed,
/// unsigned 64-bit integers would compare as signed, and the types [`ColType`] lacks).
pub type Input = Option<Arc<Expr>>;

/// Lowers a DataFusion physical expression evaluated over `schema`, whose columns are the
/// expressions `inputs` (the scanned columns, or what an operator below computed).
pub fn lower(
    expr: &Arc<dyn PhysicalExpr>,
    schema: &Schema,
    inputs: &[Input],
) -> Result<Arc<Expr>, Decline> {
    let e: &dyn PhysicalExpr = expr.as_ref();
    let ty = result_type(expr, schema)?;
    if let Some(c) = e.downcast_ref::<Column>() {
        let input = inputs
            .get(c.index())
            .ok_or_else(|| Decline::Expr(format!("column {c} is not in its input")))?;
        return input.clone().ok_or(Decline::Type(ty.arrow()));
    }
    if let Some(l) = e.downcast_ref::<Literal>() {
        let value = literal(l.value())?;
        if matches!(&value, Lit::Str(s) if s.len() > 12) {
            return Err(Decline::Expr(format!(
                "{expr} (longer than a string view holds)"
            )));
        }
        return Ok(Arc::new(Expr::Literal { value, ty }));
    }
    let sub = |x: &Arc<dyn PhysicalExpr>| lower(x, schema, inputs);
    if let Some(b) = e.downcast_ref::<BinaryExpr>() {
        return binary(*b.op(), sub(b.left())?, sub(b.right())?, ty);
    }
    if let Some(c) = e.downcast_ref::<CastExpr>() {
        let inner = sub(c.expr())?;
        if c.cast_options().safe {
            return Err(Decline::Expr(format!(
                "{expr} (a cast giving NULL on failure)"
            )));
        }
        check_cast(inner.ty(), ty)?;
        return Ok(Arc::new(Expr::Cast { expr: inner, ty }));
    }
    if let Some(n) = e.downcast_ref::<NotExpr>() {
        return Ok(Arc::new(Expr::Not(sub(n.arg())?)));
    }
    if let Some(n) = e.downcast_ref::<IsNullExpr>() {
        let expr = sub(n.arg())?;
        return Ok(Arc::new(Expr::IsNull {
            expr,
            negated: false,
        }));
    }
    if let Some(n) = e.downcast_ref::<IsNotNullExpr>() {
        let expr = sub(n.arg())?;
        return Ok(Arc::new(Expr::IsNull {
            expr,
            negated: true,
        }));
    }
    if let Some(l) = e.downcast_ref::<LikeExpr>() {
        return like(l, sub(l.expr())?);
    }
    if let Some(l) = e.downcast_ref::<InListExpr>() {
        return in_list(l, schema, inputs);
    }
    if let Some(c) = e.downcast_ref::<CaseExpr>() {
        return case(c, ty, schema, inputs);
    }
    Err(Decline::Expr(format!("{expr}")))
}

fn result_type(expr: &Arc<dyn PhysicalExpr>, schema: &Schema) -> Result<ColType, Decline> {
    let ty = expr
        .data_type(schema)
        .map_err(|e| Decline::Expr(format!("{expr}: {e}")))?;
    ColType::of(&ty).ok_or(Decline::Type(ty))
}

fn literal(v: &ScalarValue) -> Result<Lit, Decline> {
    Ok(match v {
        ScalarValue::Boolean(Some(b)) => Lit::Bool(*b),
        ScalarValue::Int32(Some(x)) | ScalarValue::Date32(Some(x)) => Lit::Int(i64::from(*x)),
        ScalarValue::Int64(Some(x)) => Lit::Int(*x),
        ScalarValue::UInt64(Some(x)) => Lit::Int(*x as i64),
        ScalarValue::Float64(Some(x)) => Lit::Float(*x),
        ScalarValue::Decimal128(Some(x), _, _) => Lit::Decimal(*x),
        ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s)) => {
            Lit::Str(s.as_bytes().to_vec())
        }
        ScalarValue::Dictionary(_, value) => return literal(value),
        other => return Err(Decline::Expr(format!("literal {other:?}"))),
    })
}

fn binary(
    op: Operator,
    left: Arc<Expr>,
    right: Arc<Expr>,
    ty: ColType,
) -> Result<Arc<Expr>, Decline> {
    let arith = |op| Expr::Arith {
        op,
        left: left.clone(),
        right: right.clone(),
        ty,
    };
    let cmp = |op| Expr::Compare {
        op,
        left: left.clone(),
        right: right.clone(),
    };
    let e = match op {
        Operator::Plus => arith(ArithOp::Add),
        Operator::Minus => arith(ArithOp::Sub),
        Operator::Multiply => arith(ArithOp::Mul),
        Operator::Divide if ty == ColType::Float64 => arith(ArithOp::Div),
        Operator::Eq => cmp(CmpOp::Eq),
        Operator::NotEq => cmp(CmpOp::Ne),
        Operator::Lt => cmp(CmpOp::Lt),
        Operator::LtEq => cmp(CmpOp::Le),
        Operator::Gt => cmp(CmpOp::Gt),
        Operator::GtEq => cmp(CmpOp::Ge),
        Operator::And => Expr::And(left.clone(), right.clone()),
        Operator::Or => Expr::Or(left.clone(), right.clone()),
        other => return Err(Decline::Expr(format!("operator {other}"))),
    };
    check_operands(&e)?;
    Ok(Arc::new(e))
}

/// Operand kinds a node supports: numbers with numbers of the result's kind, strings only
/// compared for equality, booleans only in logic.
fn check_operands(e: &Expr) -> Result<(), Decline> {
    let bad = || Err(Decline::Expr(format!("operands of {e:?}")));
    match e {
        Expr::Arith {
            left, right, ty, ..
        } => {
            let ok = |t: ColType| match ty {
                ColType::Decimal { .. } => matches!(t, ColType::Decimal { .. }),
                ColType::Float64 => t == ColType::Float64,
                t2 if t2.is_integer() => t.is_integer(),
                _ => false,
            };
            if ok(left.ty()) && ok(right.ty()) {
                Ok(())
            } else {
                bad()
            }
        }
        Expr::Compare { op, left, right } => {
            let (l, r) = (left.ty(), right.ty());
            let numeric = |t: ColType| t.is_integer() || matches!(t, ColType::Decimal { .. });
            let ok = (numeric(l) && numeric(r))
                || (l == r && matches!(l, ColType::Float64 | ColType::Date32))
                || (l == r
                    && l.is_string()
                    && matches!(op, CmpOp::Eq | CmpOp::Ne)
                    && (short_literal(left) || short_literal(right)))
                || (l == r && l == ColType::Boolean && matches!(op, CmpOp::Eq | CmpOp::Ne));
            if ok {
                Ok(())
            } else {
                bad()
            }
        }
        Expr::And(a, b) | Expr::Or(a, b)
            if a.ty() == ColType::Boolean && b.ty() == ColType::Boolean =>
        {
            Ok(())
        }
        Expr::And(..) | Expr::Or(..) => bad(),
        _ => Ok(()),
    }
}

/// A string literal held whole in a view (at most 12 bytes): a view equals it exactly when
/// the strings are equal; longer strings are compared through their data buffers, which
/// pipelines do not read.
fn short_literal(e: &Expr) -> bool {
    matches!(e, Expr::Literal { value: Lit::Str(s), .. } if s.len() <= 12)
}

fn check_cast(from: ColType, to: ColType) -> Result<(), Decline> {
    use ColType::*;
    let ok = from == to
        || matches!(
            (from, to),
            (Int32, Int64)
                | (Int32 | Int64, Float64)
                | (Int32 | Int64, Decimal { .. })
                | (Decimal { .. }, Decimal { .. })
                | (Decimal { .. }, Float64)
        );
    if ok {
        Ok(())
    } else {
        Err(Decline::Expr(format!("cast from {from:?} to {to:?}")))
    }
}

fn like(l: &LikeExpr, expr: Arc<Expr>) -> Result<Arc<Expr>, Decline> {
    let unsupported = || Decline::Expr(format!("{l}"));
    let pattern = l
        .pattern()
        .downcast_ref::<Literal>()
        .ok_or_else(unsupported)?;
    let Lit::Str(p) = literal(pattern.value())? else {
        return Err(unsupported());
    };
    let prefix = p.strip_suffix(b"%").ok_or_else(unsupported)?;
    let plain = !prefix.iter().any(|c| matches!(c, b'%' | b'_' | b'\\'));
    let long_of_column = prefix.len() <= 12 && matches!(*expr, Expr::Column { .. });
    if l.case_insensitive() || !plain || (prefix.len() > 4 && !long_of_column) {
        return Err(unsupported());
    }
    if !expr.ty().is_string() {
        return Err(unsupported());
    }
    Ok(Arc::new(Expr::LikePrefix {
        expr,
        prefix: prefix.to_vec(),
        negated: l.negated(),
    }))
}

fn in_list(l: &InListExpr, schema: &Schema, inputs: &[Input]) -> Result<Arc<Expr>, Decline> {
    let x = lower(l.expr(), schema, inputs)?;
    let mut any: Option<Arc<Expr>> = None;
    for item in l.list() {
        let eq = binary(
            Operator::Eq,
            x.clone(),
            lower(item, schema, inputs)?,
            ColType::Boolean,
        )?;
        any = Some(match any {
            None => eq,
            Some(a) => Arc::new(Expr::Or(a, eq)),
        });
    }
    let any = any.ok_or_else(|| Decline::Expr(format!("{l}")))?;
    Ok(if l.negated() {
        Arc::new(Expr::Not(any))
    } else {
        any
    })
}

/// `CASE WHEN c1 THEN v1 WHEN c2 THEN v2 ... ELSE v END` as nested [`Expr::If`]s (no base
/// expression; an `ELSE`, every value of the result type).
fn case(
    c: &CaseExpr,
    ty: ColType,
    schema: &Schema,
    inputs: &[Input],
) -> Result<Arc<Expr>, Decline> {
    let unsupported = |why: &str| Decline::Expr(format!("{c} ({why})"));
    if c.expr().is_some() {
        return Err(unsupported("a CASE with a base expression"));
    }
    let otherwise = c.else_expr().ok_or_else(|| unsupported("no ELSE"))?;
    let value = |e: &Arc<dyn PhysicalExpr>| {
        let v = lower(e, schema, inputs)?;
        if v.ty() == ty {
            Ok(v)
        } else {
            Err(unsupported("values of different types"))
        }
    };
    let mut out = value(otherwise)?;
    for (when, then) in c.when_then_expr().iter().rev() {
        let cond = lower(when, schema, inputs)?;
        if cond.ty() != ColType::Boolean {
            return Err(unsupported("a condition that is not a boolean"));
        }
        out = Arc::new(Expr::If {
            cond,
            then: value(then)?,
            otherwise: out,
            ty,
        });
    }
    Ok(out)
}
