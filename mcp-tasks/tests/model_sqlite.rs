//! The model-based check (random operation sequences vs. a reference model) on SQLite.

use mcp_tasks::conformance::SqliteFactory;
use mcp_tasks::conformance::model::{check_model, op_strategy};
use proptest::prelude::*;

proptest! {
    // Every write is an fsync: fewer cases than on memory, same generator.
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn sqlite_store_matches_the_model(ops in prop::collection::vec(op_strategy(), 1..60)) {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
        let factory = SqliteFactory::temporary();
        rt.block_on(check_model(&factory, &ops));
    }
}
