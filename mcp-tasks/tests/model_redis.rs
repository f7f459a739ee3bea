//! The model-based check (random operation sequences vs. a reference model) on Redis.
//! Skipped when no server answers, unless `MCP_REQUIRE_SERVICES=1`.

use mcp_tasks::conformance::RedisFactory;
use mcp_tasks::conformance::model::{check_model, op_strategy};
use proptest::prelude::*;

proptest! {
    // Every operation is a few network round trips: a modest number of cases.
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn redis_store_matches_the_model(ops in prop::collection::vec(op_strategy(), 1..60)) {
        let Some(factory) = RedisFactory::from_env() else {
            return Ok(());
        };
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
        rt.block_on(check_model(&factory, &ops));
    }
}
