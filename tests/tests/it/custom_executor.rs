//! A user's own [`Executor`]: the runtime hands it each created task, it stores the task
//! and passes the job to an outside system (here a channel and a spawned consumer, as a
//! queue or a workflow engine would be), which reports the outcome back through the
//! store. The tool never runs in the server; the client sees the outside system's result
//! through `tasks/get` like any other.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use mcp_tasks::{Job, MemoryStore, StoreError, TaskKey, TaskRecord, TaskStore};
use mcp_tasks_server::http::HttpConfig;
use mcp_tasks_server::{
    CallToolResult, Executor, Launch, Server, TaskPolicy, ToolContext, ToolDef,
};
use mcp_tests::server_harness::{TestServer, WAIT};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio::sync::mpsc;

#[derive(Debug, Deserialize, JsonSchema)]
struct Args {
    /// A number for the outside system.
    n: i64,
}

/// Hands each task's job to the outside system instead of running its tool.
#[derive(Debug)]
struct Outside {
    jobs: mpsc::UnboundedSender<(TaskKey, Job)>,
}

#[async_trait]
impl Executor for Outside {
    async fn execute(&self, launch: Launch) -> Result<TaskRecord, StoreError> {
        // Stored without the job, so no worker loop of ours claims it: it is the outside
        // system's.
        let mut new = launch.new_task().clone();
        let job = new.job.take().expect("a tools/call task carries its job");
        let record = launch.store().create(new).await?;
        self.jobs.send((record.key(), job)).map_err(|_| {
            StoreError::Unavailable(mcp_tasks::BackendError::new("outside system gone"))
        })?;
        Ok(record)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outside_system_runs_the_task_and_reports_through_the_store() {
    let run = async {
        let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::default());
        let ran_here = Arc::new(AtomicBool::new(false));
        let tool = {
            let ran_here = Arc::clone(&ran_here);
            ToolDef::new(
                "offload",
                TaskPolicy::Required,
                move |_ctx: ToolContext, args: Args| {
                    let ran_here = Arc::clone(&ran_here);
                    async move {
                        ran_here.store(true, Ordering::SeqCst);
                        Ok(CallToolResult::text(format!("here: {}", args.n)))
                    }
                },
            )
            .expect("tool")
        };
        let (jobs, mut outside) = mpsc::unbounded_channel::<(TaskKey, Job)>();
        // The outside system: reads the job, reports the outcome to the store.
        let reporter = {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                while let Some((key, job)) = outside.recv().await {
                    let n = job.arguments["n"].as_i64().expect("n");
                    let result = json!({
                        "content": [{"type": "text", "text": format!("outside: {}", n * 2)}]
                    });
                    let result = result.as_object().cloned().expect("object");
                    store
                        .complete(&key.owner, &key.id, result)
                        .await
                        .expect("report");
                }
            })
        };
        let server = Server::builder("mcp-tests", "0")
            .store(Arc::clone(&store))
            .executor(Arc::new(Outside { jobs }))
            .tool(tool)
            .build();
        let front = TestServer::start_server(server, HttpConfig::default()).await;
        let task_id = front.create_task("offload", json!({ "n": 21 })).await;
        let done = front
            .poll_task(&task_id, WAIT, |r| r["status"] == "completed")
            .await;
        assert_eq!(
            done["result"]["content"][0]["text"], "outside: 42",
            "{done}"
        );
        assert!(
            !ran_here.load(Ordering::SeqCst),
            "the tool ran in the server"
        );
        reporter.abort();
    };
    tokio::time::timeout(WAIT, run).await.expect("in time");
}
