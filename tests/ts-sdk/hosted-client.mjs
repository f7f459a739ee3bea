// An official TypeScript SDK client (@modelcontextprotocol/sdk, pinned in package.json)
// that hosts tasks (MCP 2025-11-25, SEP-1686, the client as receiver) in the SDK's
// InMemoryTaskStore, against our server: each question our tools ask must arrive with
// `params.task`, and our server must follow the client's task to its answer.
//
//   node hosted-client.mjs --url http://127.0.0.1:PORT/mcp
//   node hosted-client.mjs --command /path/to/conformance-server --stdio
//
// The server needs the tools confirm_delete (optional task, elicits), test_sampling and
// test_elicitation (synchronous, sample and elicit). Prints one JSON report ({transport,
// sdkVersion, ok, steps: [{step, ok, details}]}) on stdout and exits 1 when any step
// failed (2 when the whole run timed out). Every request has a timeout; so has the run.

import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  RELATED_TASK_META_KEY,
} from '@modelcontextprotocol/sdk/types.js';

const REQUEST_TIMEOUT_MS = 20_000;
const RUN_TIMEOUT_MS = 120_000;
const opts = { timeout: REQUEST_TIMEOUT_MS };

const sdkVersion = JSON.parse(
  readFileSync(new URL('./node_modules/@modelcontextprotocol/sdk/package.json', import.meta.url)),
).version;

const argv = process.argv.slice(2);
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
    env: { ...process.env, RUST_LOG: process.env.RUST_LOG ?? 'warn' },
    stderr: 'inherit',
  });
} else {
  console.error('usage: hosted-client.mjs (--url URL | --command CMD [ARGS...])');
  process.exit(64);
}

const steps = [];
function report(step, ok, details) {
  steps.push({ step, ok, details });
}
function text(result) {
  return (result?.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}
function errorInfo(e) {
  return { code: e?.code, message: e?.message ?? String(e) };
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const store = new InMemoryTaskStore();
/** Every question the server asked: method, whether as a task, the task made, related task. */
const asked = [];

/**
 * Answers `request` with `answer`: as a task of this client when the request asks for one
 * (created now, its result stored a little later, so the server sees it working first),
 * else at once. A question whose message is "hold" is never answered.
 */
async function host(request, extra, answer) {
  const entry = {
    method: request.method,
    task: request.params.task ?? null,
    related: request.params._meta?.[RELATED_TASK_META_KEY]?.taskId ?? null,
    taskId: null,
  };
  asked.push(entry);
  if (!request.params.task || !extra.taskStore) return answer;
  const task = await extra.taskStore.createTask({ ttl: extra.taskRequestedTtl });
  entry.taskId = task.taskId;
  if (request.params.message !== 'Delete hold.txt?') {
    setTimeout(() => {
      extra.taskStore.storeTaskResult(task.taskId, 'completed', answer).catch(() => {});
    }, 200);
  }
  return { task };
}

const client = new Client(
  { name: 'ts-hosted-client', version: '1.0.0' },
  {
    capabilities: {
      elicitation: { form: {} },
      sampling: {},
      tasks: {
        list: {},
        cancel: {},
        requests: { elicitation: { create: {} }, sampling: { createMessage: {} } },
      },
    },
    taskStore: store,
  },
);
client.setRequestHandler(ElicitRequestSchema, (request, extra) =>
  host(request, extra, { action: 'accept', content: { name: 'Ada', confirm: true } }),
);
client.setRequestHandler(CreateMessageRequestSchema, (request, extra) =>
  host(request, extra, {
    role: 'assistant',
    content: { type: 'text', text: '42' },
    model: 'ts-model',
  }),
);

/** The last question asked with `method` since `from`, with the checks every one needs. */
function lastAsked(method, from, problems) {
  const entry = asked.slice(from).reverse().find((a) => a.method === method);
  if (!entry) problems.push(`no ${method} was asked`);
  else {
    if (!entry.task) problems.push(`${method} came without params.task`);
    if (!entry.taskId) problems.push(`${method} made no task here`);
  }
  return entry;
}

async function step(name, run) {
  const problems = [];
  try {
    const details = await run(problems);
    report(name, problems.length === 0, { ...details, problems });
  } catch (e) {
    report(name, false, { error: errorInfo(e), problems });
  }
}

async function main() {
  await client.connect(transport);
  await step('initialize', async (problems) => {
    const version = transport.protocolVersion ?? null;
    const caps = client.getServerCapabilities();
    if (!caps?.tasks?.requests?.tools?.call) problems.push('the server offers no task tool calls');
    return { protocolVersion: version };
  });

  await step('confirm_delete as a task: its elicitation is a task of this client', async (problems) => {
    const from = asked.length;
    const messages = [];
    const stream = client.experimental.tasks.callToolStream(
      { name: 'confirm_delete', arguments: { filename: 'a.txt' } },
      CallToolResultSchema,
      { ...opts, task: { ttl: 60_000 } },
    );
    let result = null;
    for await (const m of stream) {
      messages.push(m.type);
      if (m.type === 'result') result = m.result;
      if (m.type === 'error') throw m.error;
    }
    if (!text(result).startsWith('Deleted a.txt')) problems.push(`result: ${text(result)}`);
    const entry = lastAsked('elicitation/create', from, problems);
    if (entry && !entry.related) problems.push('the elicitation named no related task');
    const hosted = entry?.taskId ? await store.getTask(entry.taskId) : null;
    if (hosted?.status !== 'completed') problems.push(`our task is ${hosted?.status}`);
    return { messages, text: text(result), asked: entry, hosted };
  });

  await step('test_sampling synchronously: its sampling is a task of this client', async (problems) => {
    const from = asked.length;
    const result = await client.callTool({ name: 'test_sampling', arguments: { prompt: 'The answer?' } }, CallToolResultSchema, opts);
    if (text(result) !== 'LLM response: 42') problems.push(`result: ${text(result)}`);
    const entry = lastAsked('sampling/createMessage', from, problems);
    return { text: text(result), asked: entry };
  });

  await step('test_elicitation synchronously: its elicitation is a task of this client', async (problems) => {
    const from = asked.length;
    const result = await client.callTool({ name: 'test_elicitation', arguments: { message: 'Your name?' } }, CallToolResultSchema, opts);
    if (result.isError) problems.push(`result: ${text(result)}`);
    const entry = lastAsked('elicitation/create', from, problems);
    return { text: text(result), asked: entry };
  });

  await step('cancelling the tool cancels this client\'s task', async (problems) => {
    const from = asked.length;
    const stream = client.experimental.tasks.callToolStream(
      { name: 'confirm_delete', arguments: { filename: 'hold.txt' } },
      CallToolResultSchema,
      { ...opts, task: {} },
    );
    let serverTask = null;
    const iterator = stream[Symbol.asyncIterator]();
    // The server's task, then wait until its question reached us as a task.
    for (;;) {
      const { value, done } = await iterator.next();
      if (done) break;
      if (value.type === 'taskCreated') {
        serverTask = value.task.taskId;
        break;
      }
      if (value.type === 'error') throw value.error;
    }
    if (!serverTask) throw new Error('confirm_delete made no task');
    // Our own tasks/result makes the server ask (2025-11-25: on that stream).
    const pending = client.experimental.tasks.getTaskResult(serverTask, CallToolResultSchema, opts).catch((e) => e);
    let entry = null;
    for (let i = 0; i < 200 && !entry; i++) {
      entry = asked.slice(from).find((a) => a.method === 'elicitation/create' && a.taskId);
      if (!entry) await sleep(50);
    }
    if (!entry) throw new Error('the question never reached us as a task');
    const cancelled = await client.experimental.tasks.cancelTask(serverTask, opts);
    let hosted = null;
    for (let i = 0; i < 200; i++) {
      hosted = await store.getTask(entry.taskId);
      if (hosted?.status === 'cancelled') break;
      await sleep(50);
    }
    if (cancelled.status !== 'cancelled') problems.push(`server task: ${cancelled.status}`);
    if (hosted?.status !== 'cancelled') problems.push(`our task stayed ${hosted?.status}`);
    await iterator.return?.();
    const outcome = await pending;
    return { serverTask: cancelled, hosted, outcome: outcome instanceof Error ? errorInfo(outcome) : outcome };
  });
}

const timer = setTimeout(() => {
  console.log(JSON.stringify({ transport: transportName, sdkVersion, ok: false, timedOut: true, steps }));
  process.exit(2);
}, RUN_TIMEOUT_MS);

try {
  await main();
} catch (e) {
  report('run', false, { error: errorInfo(e) });
}
clearTimeout(timer);
const ok = steps.length > 0 && steps.every((s) => s.ok);
console.log(JSON.stringify({ transport: transportName, sdkVersion, ok, steps }));
await client.close().catch(() => {});
process.exit(ok ? 0 : 1);
