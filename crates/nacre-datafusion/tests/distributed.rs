//! TPC-H Q1 and Q6 distributed by datafusion-distributed over two workers on localhost (gRPC
//! services in this process), each registering Nacre's side (`distributed::worker_session`):
//! the results equal a single process's, the plan's compiled pipelines sit in a stage of two
//! tasks, the workers' compiled code computes the partitions, and the session's
//! `nacre.device` reaches the workers.

#![cfg(feature = "distributed")]

use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::physical_plan::displayable;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_distributed::{
    display_plan_ascii, DistributedExt, SessionStateBuilderExt as _, Worker, WorkerResolver,
};
use nacre_datafusion::distributed::{self, DistributedNacre};
use nacre_datafusion::tpch;
use std::time::Duration;
use tokio::net::TcpListener;
use tonic::transport::Server;
use url::Url;

const PARTITIONS: usize = 4;
const SCALE: f64 = 0.01;

/// The workers' addresses.
struct Localhost(Vec<u16>);

impl WorkerResolver for Localhost {
    fn get_urls(&self) -> Result<Vec<Url>> {
        self.0
            .iter()
            .map(|port| {
                Url::parse(&format!("http://localhost:{port}"))
                    .map_err(|e| DataFusionError::External(Box::new(e)))
            })
            .collect()
    }
}

/// Starts `n` workers with Nacre's session on free ports of 127.0.0.1.
async fn start_workers(n: usize) -> Vec<u16> {
    let mut ports = Vec::new();
    for _ in 0..n {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
        ports.push(listener.local_addr().expect("bound").port());
        let worker = Worker::from_session_builder(distributed::worker_session);
        let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
        tokio::spawn(async move {
            Server::builder()
                .add_service(worker.into_worker_server())
                .serve_with_incoming(incoming)
                .await
                .expect("the worker serves");
        });
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    ports
}

fn config() -> SessionConfig {
    SessionConfig::new().with_target_partitions(PARTITIONS)
}

/// The coordinator: compiled pipelines, distributed over the workers at `ports`.
fn coordinator(ports: Vec<u16>) -> SessionContext {
    let state = SessionStateBuilder::new()
        .with_default_features()
        .with_config(config())
        .with_nacre_coordinator()
        .with_distributed_planner()
        .with_distributed_worker_resolver(Localhost(ports))
        .build();
    SessionContext::new_with_state(state)
}

async fn results(ctx: &SessionContext, sql: &str) -> String {
    let batches = ctx.sql(sql).await.expect("planned").collect().await;
    pretty_format_batches(&batches.expect("ran"))
        .expect("printed")
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tpch_over_two_workers_equals_one_process() {
    let ports = start_workers(2).await;
    let tables = tpch::Tables::generate(SCALE, PARTITIONS).expect("generated");
    let alone = SessionContext::new_with_config(config());
    tables.register(&alone).expect("registered");
    let ctx = coordinator(ports);
    tables.register(&ctx).expect("registered");

    // Q12's and Q14's pipelines join `orders` and `part`: each task joins its `lineitem`
    // partitions with all of it.
    for &(name, sql) in tpch::QUERIES.iter().chain(&tpch::JOIN_QUERIES) {
        let plan = ctx
            .sql(sql)
            .await
            .expect("planned")
            .create_physical_plan()
            .await
            .expect("physical plan");
        let text = displayable(plan.as_ref()).indent(true).to_string();
        assert!(
            text.contains("DistributedExec"),
            "{name}: not distributed:\n{text}"
        );
        let stages = display_plan_ascii(plan.as_ref(), false);
        assert!(
            stages.contains("NacreAggregateExec") && stages.contains("tasks=2"),
            "{name}: no compiled pipeline in a stage of two tasks:\n{stages}"
        );

        let before = nacre_datafusion::compiled_partitions();
        let got = results(&ctx, sql).await;
        let ran = nacre_datafusion::compiled_partitions() - before;
        assert_eq!(got, results(&alone, sql).await, "{name}");
        // Each of the two tasks computes its two partitions with compiled code.
        assert_eq!(
            ran, PARTITIONS,
            "{name}: partitions computed by compiled code"
        );
    }

    // `nacre.device` travels with the query: the workers run Q6's pipelines as kernels (on
    // the CPU kernel runtime).
    let set = ctx
        .sql("SET nacre.device = 'cpu-kernels'")
        .await
        .expect("planned");
    set.collect().await.expect("set");
    let before = nacre_datafusion::device::run_stats().partitions;
    let got = results(&ctx, tpch::Q6).await;
    assert_eq!(got, results(&alone, tpch::Q6).await, "q6 as kernels");
    let kernels = nacre_datafusion::device::run_stats().partitions - before;
    assert_eq!(kernels, PARTITIONS as u64, "q6: partitions run as kernels");
}
