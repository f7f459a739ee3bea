//! The model-based check (random operation sequences vs. a reference model) on
//! PostgreSQL, one fresh schema per case. Skipped when PostgreSQL is not reachable at
//! `MCP_TEST_POSTGRES_URL`, unless `MCP_REQUIRE_SERVICES=1`.

use mcp_tasks::conformance::PostgresFactory;
use mcp_tasks::conformance::model::{check_model, op_strategy};
use proptest::prelude::*;

proptest! {
    // Every case creates and migrates a schema: a modest number of cases.
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn postgres_store_matches_the_model(ops in prop::collection::vec(op_strategy(), 1..60)) {
        let Some(factory) = PostgresFactory::from_env() else {
            return Ok(());
        };
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
        rt.block_on(check_model(&factory, &ops));
        // The factory drops its schema here, outside the runtime.
        drop(rt);
    }
}
