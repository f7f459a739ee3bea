//! The model-based check (random operation sequences vs. a reference model) on memory.

use mcp_tasks::conformance::MemoryFactory;
use mcp_tasks::conformance::model::{check_model, op_strategy};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn memory_store_matches_the_model(ops in prop::collection::vec(op_strategy(), 1..80)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        rt.block_on(check_model(&MemoryFactory::default(), &ops));
    }
}
