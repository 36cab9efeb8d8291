//! Why a plan stays with DataFusion ([`Decline`]) and what can fail in a compiled pipeline
//! ([`Error`]).

use datafusion::arrow::datatypes::DataType;
use datafusion::error::DataFusionError;

/// Why the rule left a subtree to DataFusion's own operators (not an error: the query runs
/// as before). [`crate::NacreRule::declined`] lists the reasons of the plans it saw.
#[derive(thiserror::Error, Debug, Clone, PartialEq)]
pub enum Decline {
    /// A column or expression of a type pipelines do not compute with.
    #[error("type {0} is not supported by compiled pipelines")]
    Type(DataType),
    /// An expression pipelines cannot compile.
    #[error("expression `{0}` is not supported by compiled pipelines")]
    Expr(String),
    /// An operator or plan shape pipelines cannot compile.
    #[error("plan not supported by compiled pipelines: {0}")]
    Plan(String),
    /// Data a pipeline would read differently from DataFusion.
    #[error("data not supported by compiled pipelines: {0}")]
    Data(String),
}

/// A failure while compiling or running a pipeline.
#[derive(thiserror::Error, Debug)]
pub enum Error {
    /// Nacre could not compile the pipeline.
    #[error("compiling the query pipeline failed: {0}")]
    Compile(#[from] nacre::Error),
    /// Decimal or integer arithmetic overflowed (DataFusion reports the same rows as an
    /// arithmetic overflow).
    #[error("arithmetic overflow in a compiled query pipeline (the same query fails in DataFusion); use wider types or smaller values")]
    Overflow,
    /// Building the result batch failed.
    #[error("building the result of a compiled pipeline failed: {0}")]
    Arrow(#[from] datafusion::arrow::error::ArrowError),
    /// Device memory for a pipeline on the GPU could not be allocated.
    #[error("device memory for a compiled pipeline: {0}; free memory on the GPU or run the query on the CPU (SET nacre.device = 'cpu')")]
    DeviceMemory(#[from] nacre::gpu::MemoryError),
    /// Running or indexing the build side of a join failed.
    #[error("the build side of a compiled join: {0}")]
    Build(String),
    /// The data given to a compiled pipeline does not match its program (a pipeline whose
    /// public parts were put together by hand).
    #[error("the data does not match the compiled query pipeline: {0}; build pipelines with Pipeline::from_partial_aggregate")]
    Mismatch(String),
    /// The group table cannot grow further.
    #[error("a compiled aggregation has more than {0} groups; raise memory or run the query without nacre")]
    TooManyGroups(usize),
}

impl From<Error> for DataFusionError {
    fn from(e: Error) -> DataFusionError {
        DataFusionError::External(Box::new(e))
    }
}
