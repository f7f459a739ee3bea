// The official TypeScript SDK client (@modelcontextprotocol/sdk, pinned in package.json)
// against our server over MCP 2025-11-25 with tasks.
//
//   node interop.mjs [--pause-after STEP] --url http://127.0.0.1:PORT/mcp
//   node interop.mjs [--pause-after STEP] --command /path/to/demo-stdio [args...]
//
// With --pause-after, the script writes "interop: paused after STEP" on stderr once that
// step is reported and goes on when it reads a line on stdin (a test kills a server
// instance meanwhile); the later steps then check that what happens after the pause
// reaches the client too (status notifications of the tasks created after it).
// Prints one JSON report ({transport, sdkVersion, ok, steps: [{step, ok, details}]}) on
// stdout and exits 1 when any step failed (2 when the whole run timed out).
// Every request has a timeout; the whole run is bounded too.

import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  CallToolResultSchema,
  ElicitRequestSchema,
  TaskStatusNotificationSchema,
  RELATED_TASK_META_KEY,
} from '@modelcontextprotocol/sdk/types.js';

const REQUEST_TIMEOUT_MS = 20_000;
const RUN_TIMEOUT_MS = 120_000;
// The longest the run waits for status notifications the server may hold back or send
// only once the SDK reopened its stream.
const STATUS_WAIT_MS = 15_000;
const opts = { timeout: REQUEST_TIMEOUT_MS };

const sdkVersion = JSON.parse(
  readFileSync(new URL('./node_modules/@modelcontextprotocol/sdk/package.json', import.meta.url)),
).version;

const argv = process.argv.slice(2);
let pauseAfter = null;
if (argv[0] === '--pause-after' && argv[1]) {
  pauseAfter = argv[1];
  argv.splice(0, 2);
}
let transportName;
let transport;
if (argv[0] === '--url' && argv[1]) {
  transportName = 'streamable-http';
  transport = new StreamableHTTPClientTransport(new URL(argv[1]));
} else if (argv[0] === '--command' && argv[1]) {
  transportName = 'stdio';
  transport = new StdioClientTransport({
    command: argv[1],
    args: argv.slice(2),
    env: { ...process.env, RUST_LOG: process.env.RUST_LOG ?? 'warn', SHUTDOWN_GRACE_MS: '200' },
    stderr: 'inherit',
  });
} else {
  console.error('usage: interop.mjs [--pause-after STEP] (--url URL | --command CMD [ARGS...])');
  process.exit(64);
}

const steps = [];
function report(step, ok, details) {
  steps.push({ step, ok, details });
}
function check(cond, what, problems) {
  if (!cond) problems.push(what);
}
function text(result) {
  return (result?.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}
function errorInfo(e) {
  return { code: e?.code, message: e?.message ?? String(e) };
}
/** Drains a callToolStream into its messages (types + payloads), calling `onMessage` on each. */
async function drain(stream, onMessage) {
  const messages = [];
  for await (const m of stream) {
    messages.push(m);
    if (onMessage) await onMessage(m);
  }
  return messages;
}
function summary(messages) {
  return messages.map((m) => {
    switch (m.type) {
      case 'taskCreated':
        return { type: m.type, taskId: m.task.taskId, status: m.task.status, ttl: m.task.ttl };
      case 'taskStatus':
        return { type: m.type, status: m.task.status };
      case 'result':
        return { type: m.type, text: text(m.result), isError: m.result.isError ?? false };
      case 'error':
        return { type: m.type, ...errorInfo(m.error) };
      default:
        return { type: m.type };
    }
  });
}

const runTimer = setTimeout(() => {
  report('run', false, { error: `the run did not finish within ${RUN_TIMEOUT_MS} ms` });
  finish(2);
}, RUN_TIMEOUT_MS);

let finished = false;
function finish(code) {
  if (finished) return;
  finished = true;
  clearTimeout(runTimer);
  const ok = code === 0 && steps.every((s) => s.ok);
  process.stdout.write(JSON.stringify({ transport: transportName, sdkVersion, ok, steps }, null, 2) + '\n');
  process.exit(ok ? 0 : code || 1);
}

const client = new Client(
  { name: 'ts-sdk-interop', version: '0.0.0' },
  { capabilities: { elicitation: { form: {} } } },
);

// Elicitations the server sends: answered per the tool, recorded for the checks.
const elicitations = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  const params = request.params;
  elicitations.push({ message: params.message, relatedTask: params._meta?.[RELATED_TASK_META_KEY] ?? null });
  if (params.message.startsWith('Delete ')) {
    return { action: 'accept', content: { confirm: true } };
  }
  return { action: 'accept', content: { name: `answer-${elicitations.length}` } };
});

const statusNotifications = [];
client.setNotificationHandler(TaskStatusNotificationSchema, (n) => {
  statusNotifications.push({ taskId: n.params.taskId, status: n.params.status, meta: n.params._meta ?? null });
});

// Set when the run paused (--pause-after): how many tasks had been created by then.
let createdBeforePause = null;

/** Waits for one line on stdin (the run's own timer bounds the wait). */
function lineOnStdin() {
  return new Promise((resolve) => {
    let buffered = '';
    const onData = (chunk) => {
      buffered += chunk;
      if (buffered.includes('\n')) done();
    };
    const done = () => {
      process.stdin.off('data', onData);
      process.stdin.off('end', done);
      process.stdin.pause();
      resolve();
    };
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', onData);
    process.stdin.on('end', done);
    process.stdin.resume();
  });
}

async function step(name, body) {
  const problems = [];
  try {
    const details = (await body(problems)) ?? {};
    report(name, problems.length === 0, problems.length ? { problems, ...details } : details);
  } catch (e) {
    report(name, false, { problems, exception: errorInfo(e), stack: e?.stack?.split('\n').slice(0, 4) });
  }
  if (name === pauseAfter) {
    createdBeforePause = createdSoFar.length;
    console.error(`interop: paused after ${name}`);
    await lineOnStdin();
  }
}

// Every task the run created, in order (main's `created`).
let createdSoFar = [];
// The Mcp-Session-Id initialize got (HTTP).
let firstSessionId;

async function main() {
  const created = createdSoFar;

  await step('initialize', async (problems) => {
    // The SDK hands the negotiated version to HTTP transports only; record it on both.
    let version = null;
    const setVersion = transport.setProtocolVersion?.bind(transport);
    transport.setProtocolVersion = (v) => {
      version = v;
      setVersion?.(v);
    };
    await client.connect(transport, opts);
    const caps = client.getServerCapabilities() ?? {};
    check(version === '2025-11-25', `negotiated 2025-11-25 (got ${version})`, problems);
    check(caps.tasks?.list !== undefined, 'capabilities.tasks.list', problems);
    check(caps.tasks?.cancel !== undefined, 'capabilities.tasks.cancel', problems);
    check(caps.tasks?.requests?.tools?.call !== undefined, 'capabilities.tasks.requests.tools.call', problems);
    if (transportName === 'streamable-http') {
      check(typeof transport.sessionId === 'string' && transport.sessionId.length > 0, 'Mcp-Session-Id', problems);
      firstSessionId = transport.sessionId;
    }
    return { serverInfo: client.getServerVersion(), protocolVersion: version, capabilities: caps };
  });

  await step('tools/list taskSupport', async (problems) => {
    const { tools } = await client.listTools(undefined, opts);
    const support = Object.fromEntries(tools.map((t) => [t.name, t.execution?.taskSupport ?? null]));
    const expected = {
      greet: 'forbidden',
      slow_compute: 'optional',
      confirm_delete: 'optional',
      multi_input: 'optional',
      protocol_error_job: 'optional',
      failing_job: 'required',
      test_tool_with_task: 'required',
    };
    for (const [name, want] of Object.entries(expected)) {
      check(support[name] === want || (want === 'forbidden' && support[name] === null), `${name}: ${want} (got ${support[name]})`, problems);
    }
    check(client.isToolTask('slow_compute') === true, 'SDK sees slow_compute as a task tool', problems);
    check(client.isToolTaskRequired('failing_job') === true, 'SDK sees failing_job as task-required', problems);
    return { taskSupport: support };
  });

  await step('slow_compute as a task', async (problems) => {
    const stream = client.experimental.tasks.callToolStream(
      { name: 'slow_compute', arguments: { seconds: 0.5, label: 'sdk' } },
      CallToolResultSchema,
      { ...opts, task: { ttl: 60_000 } },
    );
    const messages = await drain(stream);
    const first = messages[0];
    const last = messages[messages.length - 1];
    check(first?.type === 'taskCreated', 'first message is taskCreated', problems);
    check(first?.task?.status === 'working', 'the new task is working', problems);
    check(first?.task?.ttl === 60_000 || typeof first?.task?.ttl === 'number' || first?.task?.ttl === null, 'ttl present', problems);
    check(last?.type === 'result', 'ends with a result', problems);
    check(/sdk: done after 0\.5 s/.test(text(last?.result)), 'result text', problems);
    check(last?.result?._meta?.[RELATED_TASK_META_KEY]?.taskId === first?.task?.taskId, 'result carries related-task _meta', problems);
    if (first?.task) created.push(first.task.taskId);
    // The task's own view after the fact.
    const task = await client.experimental.tasks.getTask(first.task.taskId, opts);
    check(task.status === 'completed', `tasks/get says completed (got ${task.status})`, problems);
    return { messages: summary(messages) };
  });

  await step('confirm_delete as a task, elicitation answered', async (problems) => {
    const before = elicitations.length;
    const stream = client.experimental.tasks.callToolStream(
      { name: 'confirm_delete', arguments: { filename: 'notes.txt' } },
      CallToolResultSchema,
      { ...opts, task: { ttl: 60_000 } },
    );
    const messages = await drain(stream);
    const first = messages[0];
    const last = messages[messages.length - 1];
    const asked = elicitations.slice(before);
    check(first?.type === 'taskCreated', 'first message is taskCreated', problems);
    check(asked.length === 1, `one elicitation (got ${asked.length})`, problems);
    check(asked[0]?.relatedTask?.taskId === first?.task?.taskId, 'the elicitation carries related-task _meta', problems);
    check(last?.type === 'result', 'ends with a result', problems);
    check(/Deleted notes\.txt/.test(text(last?.result)), 'result says deleted', problems);
    if (first?.task) created.push(first.task.taskId);
    return { messages: summary(messages), elicitations: asked };
  });

  await step('multi_input as a task, both questions answered', async (problems) => {
    const before = elicitations.length;
    const messages = await drain(
      client.experimental.tasks.callToolStream({ name: 'multi_input', arguments: {} }, CallToolResultSchema, {
        ...opts,
        task: {},
      }),
    );
    const first = messages[0];
    const last = messages[messages.length - 1];
    const asked = elicitations.slice(before);
    check(asked.length === 2, `two elicitations (got ${asked.length})`, problems);
    check(asked.every((a) => a.relatedTask?.taskId === first?.task?.taskId), 'each carries related-task _meta', problems);
    check(last?.type === 'result', 'ends with a result', problems);
    check(/^Answers: answer-\d+, answer-\d+$/.test(text(last?.result)), `result names both answers (got ${text(last?.result)})`, problems);
    if (first?.task) created.push(first.task.taskId);
    return { messages: summary(messages), elicitations: asked };
  });

  await step('cancel a slow_compute task', async (problems) => {
    let cancelled = null;
    let secondCancel = null;
    const messages = await drain(
      client.experimental.tasks.callToolStream(
        { name: 'slow_compute', arguments: { seconds: 30 } },
        CallToolResultSchema,
        { ...opts, task: { ttl: 60_000 } },
      ),
      async (m) => {
        if (m.type === 'taskCreated') {
          created.push(m.task.taskId);
          cancelled = await client.experimental.tasks.cancelTask(m.task.taskId, opts);
          try {
            await client.experimental.tasks.cancelTask(m.task.taskId, opts);
            secondCancel = { ok: true };
          } catch (e) {
            secondCancel = errorInfo(e);
          }
        }
      },
    );
    const last = messages[messages.length - 1];
    check(cancelled?.status === 'cancelled', `tasks/cancel returns the task cancelled (got ${cancelled?.status})`, problems);
    check(secondCancel?.code === -32602, `a second cancel is -32602 (got ${JSON.stringify(secondCancel)})`, problems);
    check(last?.type === 'error' && /cancelled/.test(last.error.message), 'the stream ends with "cancelled"', problems);
    const task = await client.experimental.tasks.getTask(cancelled?.taskId, opts);
    check(task.status === 'cancelled', 'tasks/get stays cancelled', problems);
    return { cancelResult: cancelled, secondCancel, messages: summary(messages) };
  });

  await step('failing_job (required) as a task', async (problems) => {
    let plain = null;
    try {
      // Bypasses the SDK's own "requires task" guard, to see the server's answer.
      await client.request({ method: 'tools/call', params: { name: 'failing_job', arguments: {} } }, CallToolResultSchema, opts);
      plain = { ok: true };
    } catch (e) {
      plain = errorInfo(e);
    }
    check(plain?.code === -32601, `plain call is -32601 (got ${JSON.stringify(plain)})`, problems);
    const messages = await drain(
      client.experimental.tasks.callToolStream({ name: 'failing_job', arguments: {} }, CallToolResultSchema, opts),
    );
    const first = messages[0];
    const last = messages[messages.length - 1];
    check(first?.type === 'taskCreated', 'the SDK task-augments it by itself', problems);
    check(last?.type === 'error' && /failed/.test(last.error.message), 'the stream ends with "failed"', problems);
    if (first?.task) created.push(first.task.taskId);
    const payload = await client.experimental.tasks.getTaskResult(first.task.taskId, CallToolResultSchema, opts);
    check(payload.isError === true, 'tasks/result is the isError result', problems);
    return { plainCall: plain, messages: summary(messages), payload: { text: text(payload), isError: payload.isError } };
  });

  await step('protocol_error_job: tasks/result is the JSON-RPC error', async (problems) => {
    const messages = await drain(
      client.experimental.tasks.callToolStream({ name: 'protocol_error_job', arguments: {} }, CallToolResultSchema, {
        ...opts,
        task: {},
      }),
    );
    const first = messages[0];
    if (first?.task) created.push(first.task.taskId);
    let payloadError = null;
    try {
      await client.experimental.tasks.getTaskResult(first.task.taskId, CallToolResultSchema, opts);
    } catch (e) {
      payloadError = errorInfo(e);
    }
    check(payloadError?.code === -32603, `tasks/result is -32603 (got ${JSON.stringify(payloadError)})`, problems);
    check(/protocol-level error/.test(payloadError?.message ?? ''), 'with the original message', problems);
    return { messages: summary(messages), payloadError };
  });

  await step('tasks/list', async (problems) => {
    const seen = [];
    let cursor;
    for (let page = 0; page < 100; page++) {
      const result = await client.experimental.tasks.listTasks(cursor, opts);
      seen.push(...result.tasks.map((t) => t.taskId));
      cursor = result.nextCursor;
      if (!cursor) break;
    }
    for (const id of created) check(seen.includes(id), `lists ${id}`, problems);
    check(new Set(seen).size === seen.length, 'no duplicates', problems);
    return { listed: seen.length, created: created.length };
  });

  await step('greet synchronously', async (problems) => {
    const result = await client.callTool({ name: 'greet', arguments: { name: 'SDK' } }, undefined, opts);
    check(text(result) === 'Hello, SDK!', `text (got ${text(result)})`, problems);
    check(!result.isError, 'not an error', problems);
    let withTask = null;
    try {
      await client.request(
        { method: 'tools/call', params: { name: 'greet', arguments: { name: 'x' }, task: {} } },
        CallToolResultSchema,
        opts,
      );
      withTask = { ok: true };
    } catch (e) {
      withTask = errorInfo(e);
    }
    check(withTask?.code === -32601, `greet with task is -32601 (got ${JSON.stringify(withTask)})`, problems);
    return { text: text(result), withTask };
  });

  await step('notifications/tasks/status', async (problems) => {
    // Sent on the standalone GET stream (HTTP) or the connection (stdio). A server may hold
    // a status back until the client names its task (2x the poll interval at most), and
    // after an instance was lost the SDK reopens its GET stream only after a delay: wait,
    // bounded, for what those delays allow.
    const later = () => (createdBeforePause === null ? [] : created.slice(createdBeforePause));
    const arrived = () => {
      const ours = statusNotifications.filter((n) => created.includes(n.taskId));
      const afterPause = ours.filter((n) => later().includes(n.taskId));
      return ours.length > 0 && (createdBeforePause === null || afterPause.length > 0);
    };
    const waitUntil = Date.now() + STATUS_WAIT_MS;
    while (!arrived() && Date.now() < waitUntil) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const forCreated = statusNotifications.filter((n) => created.includes(n.taskId));
    check(forCreated.length > 0, 'at least one status notification for our tasks', problems);
    check(forCreated.every((n) => !n.meta?.[RELATED_TASK_META_KEY]), 'none carries related-task _meta', problems);
    let afterPause = null;
    if (createdBeforePause !== null) {
      // What happened after the pause reached the client as well (over HTTP through the
      // standalone stream, which may have had to be opened again meanwhile).
      afterPause = forCreated.filter((n) => later().includes(n.taskId)).length;
      check(later().length > 0, 'tasks were created after the pause', problems);
      check(afterPause > 0, 'a status notification for a task created after the pause', problems);
    }
    return {
      received: statusNotifications.length,
      statuses: [...new Set(forCreated.map((n) => n.status))],
      afterPause,
    };
  });

  await step('a second session sees none of the first one\'s tasks', async (problems) => {
    if (transportName !== 'streamable-http') {
      // Over stdio every client starts its own server process: a second session there
      // shares nothing with the first, so there is nothing to check.
      return { skipped: 'stdio: one session per server process' };
    }
    const other = new Client({ name: 'mcp-tasks-rs-interop-second', version: '1.0.0' }, { capabilities: {} });
    await other.connect(new StreamableHTTPClientTransport(new URL(argv[1])));
    const target = created[0];
    const refused = async (what, call) => {
      try {
        await call();
        problems.push(`${what} of another session's task succeeded`);
        return { ok: true };
      } catch (e) {
        const info = errorInfo(e);
        check(info.code === -32602, `${what} is -32602 (got ${JSON.stringify(info)})`, problems);
        return info;
      }
    };
    const get = await refused('getTask', () => other.experimental.tasks.getTask(target, opts));
    const result = await refused('getTaskResult', () => other.experimental.tasks.getTaskResult(target, CallToolResultSchema, opts));
    const cancel = await refused('cancelTask', () => other.experimental.tasks.cancelTask(target, opts));
    const listed = await other.experimental.tasks.listTasks(undefined, opts);
    const leaked = listed.tasks.filter((t) => created.includes(t.taskId)).map((t) => t.taskId);
    check(leaked.length === 0, `tasks/list of the second session shows none of ours (got ${JSON.stringify(leaked)})`, problems);
    let unknown = null;
    try {
      await other.experimental.tasks.getTask('0123456789abcdef0123456789abcdef', opts);
    } catch (e) {
      unknown = errorInfo(e);
    }
    check(unknown?.message === get?.message, 'another session\'s task reads exactly like an unknown id', problems);
    await other.close();
    return { target, get, result, cancel, listedBySecond: listed.tasks.length };
  });

  if (createdBeforePause !== null) {
    await step('the session outlived the pause', async (problems) => {
      const { tools } = await client.listTools(undefined, opts);
      check(tools.length > 0, 'tools/list answers', problems);
      check(transport.sessionId === firstSessionId, `still the session initialize opened (${firstSessionId}, now ${transport.sessionId})`, problems);
      return { sessionId: transport.sessionId ?? null };
    });
  }

  await client.close();
}

main().then(
  () => finish(0),
  (e) => {
    report('run', false, { exception: errorInfo(e) });
    finish(1);
  },
);
