//! The column types a compiled pipeline understands, and how each is held in traced code.

use datafusion::arrow::datatypes::DataType;

/// A SQL type of a column or expression that a pipeline computes with.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum ColType {
    /// `BOOLEAN` (computed only: predicates; boolean columns are not read).
    Boolean,
    /// `INT` (Arrow `Int32`).
    Int32,
    /// `BIGINT` (Arrow `Int64`).
    Int64,
    /// `BIGINT UNSIGNED` (Arrow `UInt64`: counts).
    UInt64,
    /// `DOUBLE` (Arrow `Float64`).
    Float64,
    /// `DATE` (Arrow `Date32`: days since 1970-01-01).
    Date32,
    /// `DECIMAL(precision, scale)` (Arrow `Decimal128`), a scaled 128-bit integer.
    Decimal {
        /// Digits in all.
        precision: u8,
        /// Digits after the point.
        scale: i8,
    },
    /// A string as an Arrow view (`Utf8View`): 16 bytes holding its length, its first bytes
    /// and, up to 12 bytes, the whole string.
    Utf8View,
    /// A string of an Arrow `Utf8` column (offsets into bytes). Pipelines read it as views:
    /// the host converts each batch's column (Arrow's cast) before the call.
    Utf8,
    /// A dictionary-encoded string (Arrow `Dictionary(Int32, Utf8)`), read as views as
    /// [`ColType::Utf8`].
    DictUtf8,
}

impl ColType {
    /// The pipeline type of an Arrow type, if it has one.
    pub fn of(ty: &DataType) -> Option<ColType> {
        Some(match ty {
            DataType::Boolean => ColType::Boolean,
            DataType::Int32 => ColType::Int32,
            DataType::Int64 => ColType::Int64,
            DataType::UInt64 => ColType::UInt64,
            DataType::Float64 => ColType::Float64,
            DataType::Date32 => ColType::Date32,
            DataType::Decimal128(precision, scale) if *scale >= 0 => ColType::Decimal {
                precision: *precision,
                scale: *scale,
            },
            DataType::Utf8View => ColType::Utf8View,
            DataType::Utf8 => ColType::Utf8,
            DataType::Dictionary(k, v) if **k == DataType::Int32 && **v == DataType::Utf8 => {
                ColType::DictUtf8
            }
            _ => return None,
        })
    }

    /// The Arrow type.
    pub fn arrow(self) -> DataType {
        match self {
            ColType::Boolean => DataType::Boolean,
            ColType::Int32 => DataType::Int32,
            ColType::Int64 => DataType::Int64,
            ColType::UInt64 => DataType::UInt64,
            ColType::Float64 => DataType::Float64,
            ColType::Date32 => DataType::Date32,
            ColType::Decimal { precision, scale } => DataType::Decimal128(precision, scale),
            ColType::Utf8View => DataType::Utf8View,
            ColType::Utf8 => DataType::Utf8,
            ColType::DictUtf8 => {
                DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
            }
        }
    }

    /// How traced code holds a value of this type.
    pub fn repr(self) -> Repr {
        match self {
            ColType::Boolean => Repr::Bool,
            ColType::Int32 | ColType::Date32 => Repr::I32,
            ColType::Int64 | ColType::UInt64 => Repr::I64,
            ColType::Float64 => Repr::F64,
            ColType::Decimal { .. } => Repr::I128,
            ColType::Utf8View | ColType::Utf8 | ColType::DictUtf8 => Repr::View,
        }
    }

    /// True for strings, whatever their encoding.
    pub fn is_string(self) -> bool {
        self.repr() == Repr::View
    }

    /// True for strings that the host converts to views before a call.
    pub fn needs_views(self) -> bool {
        matches!(self, ColType::Utf8 | ColType::DictUtf8)
    }

    /// The scale of a decimal, 0 for other types.
    pub fn scale(self) -> i8 {
        match self {
            ColType::Decimal { scale, .. } => scale,
            _ => 0,
        }
    }

    /// True for the integer types (not decimals).
    pub fn is_integer(self) -> bool {
        matches!(self, ColType::Int32 | ColType::Int64 | ColType::UInt64)
    }
}

/// The traced representation of a value.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Repr {
    /// `Val<bool>`.
    Bool,
    /// `Val<i32>`.
    I32,
    /// `Val<i64>`.
    I64,
    /// `Val<i128>` (decimals, scaled).
    I128,
    /// `Val<f64>`.
    F64,
    /// Two `Val<u64>`: the 16 bytes of an Arrow string view.
    View,
}

impl Repr {
    /// How many 64-bit words a group key of this representation takes.
    pub fn key_words(self) -> usize {
        match self {
            Repr::I128 | Repr::View => 2,
            _ => 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrow_types_round_trip() {
        for ty in [
            DataType::Int32,
            DataType::Int64,
            DataType::UInt64,
            DataType::Float64,
            DataType::Date32,
            DataType::Decimal128(15, 2),
            DataType::Utf8View,
            DataType::Utf8,
            DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
            DataType::Boolean,
        ] {
            assert_eq!(ColType::of(&ty).unwrap().arrow(), ty);
        }
        assert_eq!(ColType::of(&DataType::LargeUtf8), None);
        assert_eq!(ColType::of(&DataType::Float32), None);
    }

    #[test]
    fn representations() {
        let dec = ColType::of(&DataType::Decimal128(15, 2)).unwrap();
        assert_eq!((dec.repr(), dec.scale()), (Repr::I128, 2));
        assert_eq!(ColType::Date32.repr(), Repr::I32);
        assert_eq!(Repr::View.key_words(), 2);
    }
}
