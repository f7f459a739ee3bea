//! The non-task messages of MCP 2025-11-25, validated against the official schema and
//! ours, and round-tripped through our types.

#![allow(clippy::unwrap_used)]

mod tasks_common;

use mcp_tasks_protocol::v2025 as v;
use serde_json::json;
use tasks_common::check;

#[test]
fn lifecycle_and_utilities() {
    check::<v::PingRequest>(
        false,
        "PingRequest",
        json!({"jsonrpc":"2.0","id":1,"method":"ping"}),
    );
    check::<v::InitializedNotification>(
        false,
        "InitializedNotification",
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
    );
    check::<v::CancelledNotification>(
        false,
        "CancelledNotification",
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"r1","reason":"user"}}),
    );
    check::<v::ProgressNotification>(
        false,
        "ProgressNotification",
        json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":0.5,"total":1.0,"message":"half"}}),
    );
    check::<v::EmptyResult>(false, "EmptyResult", json!({}));
}

#[test]
fn resources_prompts_completion_logging() {
    check::<v::ListResourcesRequest>(
        false,
        "ListResourcesRequest",
        json!({"jsonrpc":"2.0","id":1,"method":"resources/list","params":{"cursor":"c"}}),
    );
    check::<v::ListResourcesResult>(
        false,
        "ListResourcesResult",
        json!({"resources":[{"uri":"file:///a.txt","name":"a","mimeType":"text/plain"}],"nextCursor":"n"}),
    );
    check::<v::ListResourceTemplatesResult>(
        false,
        "ListResourceTemplatesResult",
        json!({"resourceTemplates":[{"uriTemplate":"file:///{path}","name":"files"}]}),
    );
    check::<v::ReadResourceRequest>(
        false,
        "ReadResourceRequest",
        json!({"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///a.txt"}}),
    );
    check::<v::ReadResourceResult>(
        false,
        "ReadResourceResult",
        json!({"contents":[{"uri":"file:///a.txt","text":"hello"},{"uri":"file:///b","blob":"AAEC","mimeType":"application/octet-stream"}]}),
    );
    check::<v::SubscribeRequest>(
        false,
        "SubscribeRequest",
        json!({"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{"uri":"file:///a"}}),
    );
    check::<v::UnsubscribeRequest>(
        false,
        "UnsubscribeRequest",
        json!({"jsonrpc":"2.0","id":4,"method":"resources/unsubscribe","params":{"uri":"file:///a"}}),
    );
    check::<v::ResourceUpdatedNotification>(
        false,
        "ResourceUpdatedNotification",
        json!({"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a"}}),
    );
    check::<v::ResourceListChangedNotification>(
        false,
        "ResourceListChangedNotification",
        json!({"jsonrpc":"2.0","method":"notifications/resources/list_changed"}),
    );
    check::<v::ListPromptsResult>(
        false,
        "ListPromptsResult",
        json!({"prompts":[{"name":"greet","arguments":[{"name":"who","required":true}]}]}),
    );
    check::<v::GetPromptRequest>(
        false,
        "GetPromptRequest",
        json!({"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"greet","arguments":{"who":"Luca"}}}),
    );
    check::<v::GetPromptResult>(
        false,
        "GetPromptResult",
        json!({"description":"d","messages":[{"role":"user","content":{"type":"text","text":"Hello Luca"}}]}),
    );
    check::<v::PromptListChangedNotification>(
        false,
        "PromptListChangedNotification",
        json!({"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}),
    );
    check::<v::CompleteRequest>(
        false,
        "CompleteRequest",
        json!({"jsonrpc":"2.0","id":6,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"greet"},
            "argument":{"name":"who","value":"Lu"},"context":{"arguments":{"x":"y"}}}}),
    );
    check::<v::CompleteRequest>(
        false,
        "CompleteRequest",
        json!({"jsonrpc":"2.0","id":7,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"file:///{path}"},
            "argument":{"name":"path","value":"a"}}}),
    );
    check::<v::CompleteResult>(
        false,
        "CompleteResult",
        json!({"completion":{"values":["Luca"],"total":1,"hasMore":false}}),
    );
    check::<v::SetLevelRequest>(
        false,
        "SetLevelRequest",
        json!({"jsonrpc":"2.0","id":8,"method":"logging/setLevel","params":{"level":"warning"}}),
    );
    check::<v::LoggingMessageNotification>(
        false,
        "LoggingMessageNotification",
        json!({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"error","logger":"db","data":{"err":"x"}}}),
    );
    check::<v::ToolListChangedNotification>(
        false,
        "ToolListChangedNotification",
        json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed"}),
    );
}

#[test]
fn sampling_elicitation_roots() {
    check::<v::CreateMessageResult>(
        false,
        "CreateMessageResult",
        json!({"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"u1","name":"f","input":{}}],
            "model":"m","stopReason":"toolUse"}),
    );
    check::<v::CreateMessageRequest>(
        false,
        "CreateMessageRequest",
        json!({"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{"maxTokens":10,"includeContext":"thisServer",
            "messages":[{"role":"user","content":{"type":"tool_result","toolUseId":"u1","content":[{"type":"text","text":"r"}]}}],
            "tools":[{"name":"f","inputSchema":{"type":"object"}}],"toolChoice":{"mode":"auto"}}}),
    );
    check::<v::ListRootsRequest>(
        false,
        "ListRootsRequest",
        json!({"jsonrpc":"2.0","id":2,"method":"roots/list"}),
    );
    check::<v::RootsListChangedNotification>(
        false,
        "RootsListChangedNotification",
        json!({"jsonrpc":"2.0","method":"notifications/roots/list_changed"}),
    );
    check::<v::ElicitationCompleteNotification>(
        false,
        "ElicitationCompleteNotification",
        json!({"jsonrpc":"2.0","method":"notifications/elicitation/complete","params":{"elicitationId":"e-1"}}),
    );
    let err = check::<v::URLElicitationRequiredError>(
        false,
        "URLElicitationRequiredError",
        json!({"jsonrpc":"2.0","id":3,"error":{"code":-32042,"message":"Authorization needed","data":{"elicitations":[
            {"mode":"url","message":"Sign in","elicitationId":"e-1","url":"https://example.com/auth"}]}}}),
    );
    assert_eq!(err.elicitations().unwrap()[0].elicitation_id, "e-1");
    let built = v::URLElicitationRequiredError::new(
        Some(3.into()),
        "Authorization needed",
        err.elicitations().unwrap(),
    );
    assert_eq!(built, err);
}

#[test]
fn unions() {
    for m in [
        json!({"jsonrpc":"2.0","id":1,"method":"ping"}),
        json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
        json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}),
    ] {
        check::<v::ClientRequest>(false, "ClientRequest", m);
    }
    check::<v::ServerRequest>(
        false,
        "ServerRequest",
        json!({"jsonrpc":"2.0","id":"s","method":"roots/list"}),
    );
    check::<v::ServerNotification>(
        false,
        "ServerNotification",
        json!({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}),
    );
    check::<v::ClientNotification>(
        false,
        "ClientNotification",
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
    );
    check::<v::ServerResult>(
        false,
        "ServerResult",
        json!({"content":[{"type":"text","text":"hi"}],"isError":false}),
    );
    check::<v::ClientResult>(
        false,
        "ClientResult",
        json!({"action":"accept","content":{"name":"Luca"}}),
    );
    check::<v::ClientResult>(
        false,
        "ClientResult",
        json!({"roots":[{"uri":"file:///tmp"}]}),
    );
}
