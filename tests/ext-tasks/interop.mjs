// The official MCP tasks client library (@modelcontextprotocol/ext-tasks on
// @modelcontextprotocol/client, pinned in package.json: what the MCP Inspector's Tasks tab
// uses) against our demo server, on one protocol revision:
//
//   node interop.mjs --revision 2025-11-25 [--bearer NAME] --url http://127.0.0.1:PORT/mcp
//   node interop.mjs --revision 2026-07-28 [--bearer NAME] --command /path/to/demo-stdio [args...]
//
// 2025-11-25: the SDK client's `initialize` session, tasks created with `params.task`
// (generation "v1" of the library). 2026-07-28: `server/discover`, the
// `io.modelcontextprotocol/tasks` extension (generation "v2"); the SDK client's codecs do
// not carry the extension's wire shapes, so the library sends `tools/call` and `tasks/*`
// through `rawDispatch`, given here by `RawChannel` on the same transport.
// `--bearer NAME` sends `Authorization: Bearer NAME` over HTTP, so a second client is the
// same principal (the hand-off step resumes a task there).
//
// Prints one JSON report ({transport, revision, sdkVersion (ext-tasks), clientVersion, ok,
// steps: [{step, ok, details}]}) on stdout and exits 1 when a step failed (2 when the whole
// run timed out). Every request has a timeout, every wait a bound, and so has the run.

import { readFileSync } from 'node:fs';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import {
  createApplicationInputHandler,
  createTaskSessionFromClient,
  resultFromTaskOutcome,
} from '@modelcontextprotocol/ext-tasks/client';

const REQUEST_TIMEOUT_MS = 20_000;
const SETTLE_TIMEOUT_MS = 30_000;
const RUN_TIMEOUT_MS = 120_000;
const CONCURRENCY_ROUNDS = 5;
const CONCURRENT_TASKS = 12;
const AT_A_TIME = 6;
const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
const RELATED_TASK = 'io.modelcontextprotocol/related-task';
const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';
const RAW_ID_PREFIX = 'ext-tasks-raw-';
const WIRE_LOG_LIMIT = 20_000;

const version = (pkg) =>
  JSON.parse(readFileSync(new URL(`./node_modules/${pkg}/package.json`, import.meta.url))).version;
const sdkVersion = version('@modelcontextprotocol/ext-tasks');
const clientVersion = version('@modelcontextprotocol/client');

// ---------------------------------------------------------------------------------------
// Arguments
// ---------------------------------------------------------------------------------------

const argv = process.argv.slice(2);
let revision = null;
let bearer = null;
for (;;) {
  if (argv[0] === '--revision' && argv[1]) {
    revision = argv[1];
    argv.splice(0, 2);
  } else if (argv[0] === '--bearer' && argv[1]) {
    bearer = argv[1];
    argv.splice(0, 2);
  } else {
    break;
  }
}
let transportName = null;
if (argv[0] === '--url' && argv[1]) transportName = 'streamable-http';
if (argv[0] === '--command' && argv[1]) transportName = 'stdio';
if (!['2025-11-25', '2026-07-28'].includes(revision) || transportName === null) {
  console.error(
    'usage: interop.mjs --revision (2025-11-25|2026-07-28) [--bearer NAME] (--url URL | --command CMD [ARGS...])',
  );
  process.exit(64);
}
const modern = revision === '2026-07-28';
const generation = modern ? 'v2' : 'v1';

function newTransport() {
  if (transportName === 'streamable-http') {
    const headers = bearer ? { Authorization: `Bearer ${bearer}` } : {};
    return new StreamableHTTPClientTransport(new URL(argv[1]), { requestInit: { headers } });
  }
  return new StdioClientTransport({
    command: argv[1],
    args: argv.slice(2),
    env: { ...process.env, RUST_LOG: process.env.RUST_LOG ?? 'warn', SHUTDOWN_GRACE_MS: '200' },
    stderr: 'inherit',
  });
}

// ---------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------

const steps = [];
let finished = false;
const runTimer = setTimeout(() => {
  steps.push({ step: 'run', ok: false, details: { error: `the run did not finish within ${RUN_TIMEOUT_MS} ms` } });
  finish(2);
}, RUN_TIMEOUT_MS);

function finish(code) {
  if (finished) return;
  finished = true;
  clearTimeout(runTimer);
  const ok = code === 0 && steps.every((s) => s.ok);
  const report = { transport: transportName, revision, sdkVersion, clientVersion, ok, steps };
  process.stdout.write(JSON.stringify(report, null, 2) + '\n', () => process.exit(ok ? 0 : code || 1));
}

function check(cond, what, problems) {
  if (!cond) problems.push(what);
}
function errorInfo(e) {
  return { name: e?.name, code: e?.code, message: e?.message ?? String(e), cause: e?.cause?.message };
}
function text(result) {
  return (result?.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}
/** `promise`, or a rejection naming `what` after `ms`. */
function bounded(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function step(name, body) {
  const problems = [];
  try {
    const details = (await body(problems)) ?? {};
    steps.push({ step: name, ok: problems.length === 0, details: problems.length ? { problems, ...details } : details });
  } catch (e) {
    steps.push({ step: name, ok: false, details: { problems, exception: errorInfo(e), stack: e?.stack?.split('\n').slice(0, 5) } });
  }
}

// ---------------------------------------------------------------------------------------
// Wire: what each connection received and answered, in order (evidence for the report)
// ---------------------------------------------------------------------------------------

/**
 * One log of a connection's frames: `{n, burst, dir, kind, method?, id?, taskId?, created?,
 * action?}`. Frames the transport handed over in one synchronous run (one read from the
 * connection: no promise continuation of the library ran between them) share `burst`.
 */
class WireLog {
  entries = [];
  requestTasks = new Map();
  /** The `notifications/subscriptions/acknowledged` params received, as sent. */
  acks = [];
  burst = 0;
  burstOpen = false;
  add(entry) {
    if (!this.burstOpen) {
      this.burst += 1;
      this.burstOpen = true;
      queueMicrotask(() => {
        this.burstOpen = false;
      });
    }
    if (this.entries.length < WIRE_LOG_LIMIT) this.entries.push({ n: this.entries.length, burst: this.burst, t: performance.now(), ...entry });
  }
  incoming(message) {
    if (message === null || typeof message !== 'object' || Array.isArray(message)) return;
    if (message.method === 'notifications/subscriptions/acknowledged') this.acks.push(message.params);
    if (typeof message.method === 'string' && message.id !== undefined) {
      const taskId = message.params?._meta?.[RELATED_TASK]?.taskId;
      this.requestTasks.set(message.id, taskId);
      this.add({ dir: 'in', kind: 'request', method: message.method, id: message.id, taskId, message: message.params?.message });
    } else if (typeof message.method === 'string') {
      this.add({ dir: 'in', kind: 'notification', method: message.method, taskId: message.params?.taskId, status: message.params?.status });
    } else if (message.id !== undefined) {
      const result = message.result;
      const created = result?.task?.taskId ?? (result?.resultType === 'task' ? result.taskId : undefined);
      this.add({ dir: 'in', kind: 'response', id: message.id, created, pollInterval: result?.task?.pollInterval ?? result?.pollIntervalMs, error: message.error?.code });
    }
  }
  outgoing(message) {
    if (message === null || typeof message !== 'object' || Array.isArray(message)) return;
    if (typeof message.method === 'string') {
      this.add({ dir: 'out', kind: message.id === undefined ? 'notification' : 'request', method: message.method, id: message.id, name: message.params?.name, taskId: message.params?.taskId });
    } else if (message.id !== undefined) {
      this.add({ dir: 'out', kind: 'response', id: message.id, taskId: this.requestTasks.get(message.id), action: message.result?.action, error: message.error?.code });
    }
  }
  /** The order in which the frames about `taskId` came and went. */
  about(taskId) {
    return this.entries.filter((e) => e.taskId === taskId || e.created === taskId);
  }

  /**
   * For a task whose question the library did not hand to the application: the order of
   * the `tools/call` response naming the task, the server's question about it, and the
   * library's answer, and what that order means.
   */
  inputOrder(taskId) {
    const frames = this.about(taskId);
    const created = frames.find((e) => e.created === taskId);
    const question = frames.find((e) => e.kind === 'request' && e.dir === 'in' && e.method === 'elicitation/create');
    const answer = question && frames.find((e) => e.dir === 'out' && e.kind === 'response' && e.id === question.id);
    let verdict;
    if (!created || !question) verdict = 'the response naming the task or the question is missing';
    else if (question.n < created.n)
      verdict = `server: elicitation/create for the task (frame ${question.n}) arrived before the tools/call response naming it (frame ${created.n}); the library could not know the task yet and answered ${JSON.stringify(answer?.action ?? answer?.error)}`;
    else if (question.burst === created.burst)
      verdict = `library: the tools/call response (frame ${created.n}) came first, but in one read with the question (frame ${question.n}), which the library routed before its call had registered the task; it answered ${JSON.stringify(answer?.action ?? answer?.error)}`;
    else verdict = `unexplained: the tools/call response (frame ${created.n}, read ${created.burst}) came before the question (frame ${question.n}, read ${question.burst}); the library answered ${JSON.stringify(answer?.action ?? answer?.error)}`;
    return { verdict, frames };
  }
}

/**
 * The raw request path the library needs on 2026-07-28 (`rawDispatch`): requests sent on
 * the connected transport under string ids of our own (the SDK's ids are numbers), whose
 * responses are taken out before the SDK client sees them. Every request has a timeout.
 */
class RawChannel {
  pending = new Map();
  next = 0;
  constructor(transport, wire) {
    this.transport = transport;
    this.wire = wire;
    const onmessage = transport.onmessage;
    transport.onmessage = (message, extra) => {
      wire.incoming(message);
      if (this.take(message)) return;
      onmessage?.(message, extra);
    };
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
      wire.outgoing(message);
      return send(message, options);
    };
    const onclose = transport.onclose;
    transport.onclose = () => {
      for (const entry of this.pending.values()) entry.fail(new Error('connection closed'));
      onclose?.();
    };
  }

  take(message) {
    if (typeof message?.id !== 'string' || !message.id.startsWith(RAW_ID_PREFIX) || 'method' in message) return false;
    const entry = this.pending.get(message.id);
    if (entry === undefined) return true;
    if (message.error !== undefined) entry.done({ kind: 'error', error: message.error });
    else entry.done({ kind: 'result', result: message.result });
    return true;
  }

  /** `RawClientDispatch`: one request, its response or error (or a rejection). */
  dispatch = (request, options = {}) => {
    const id = `${RAW_ID_PREFIX}${++this.next}`;
    const timeoutMs = options.context?.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
    const abort = new AbortController();
    return new Promise((resolve, reject) => {
      const settle = (f) => {
        clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        this.pending.delete(id);
        f();
      };
      const entry = {
        done: (response) => settle(() => resolve(response)),
        fail: (error) => settle(() => {
          abort.abort();
          reject(error);
        }),
      };
      const timer = setTimeout(() => entry.fail(new Error(`${request.method}: no response within ${timeoutMs} ms`)), timeoutMs);
      const onAbort = () => entry.fail(options.signal.reason ?? new Error('aborted'));
      if (options.signal?.aborted) return onAbort();
      options.signal?.addEventListener('abort', onAbort, { once: true });
      this.pending.set(id, entry);
      const message = { jsonrpc: '2.0', id, method: request.method, ...(request.params === undefined ? {} : { params: request.params }) };
      const headers = options.context?.headers;
      Promise.resolve()
        .then(() => this.transport.send(message, { requestSignal: abort.signal, ...(headers ? { headers } : {}) }))
        .catch((e) => entry.fail(e));
    });
  };
}

// ---------------------------------------------------------------------------------------
// The application: input answers and what the library reported
// ---------------------------------------------------------------------------------------

/** Every input request the library handed to the application, with its context. */
const asked = [];
/** Errors the library reported in the background (e.g. input it could not correlate). */
const backgroundErrors = [];
/** Status notifications received (either revision), with their `_meta`. */
const pushed = [];
/** For the concurrency step: task id -> the file its caller asked to delete. */
const expectedFile = new Map();
const expectedWaiters = new Map();
let answerCount = 0;

function expectFile(taskId, file) {
  expectedFile.set(taskId, file);
  for (const wake of expectedWaiters.get(taskId) ?? []) wake();
  expectedWaiters.delete(taskId);
}
async function fileExpectedFor(taskId) {
  if (!expectedFile.has(taskId)) {
    await bounded(
      new Promise((resolve) => expectedWaiters.set(taskId, [...(expectedWaiters.get(taskId) ?? []), resolve])),
      REQUEST_TIMEOUT_MS,
      `the caller of task ${taskId}`,
    ).catch(() => {});
  }
  return expectedFile.get(taskId);
}

const onInputRequest = createApplicationInputHandler({
  elicitation: async (request, context) => {
    const message = request.params?.message ?? '';
    const entry = { message, taskId: context.taskId ?? null, scope: context.scope, delivery: context.delivery, inputId: context.inputId ?? null };
    asked.push(entry);
    const file = /^Delete (.*)\?$/.exec(message)?.[1];
    if (file !== undefined) {
      // A concurrent task's answer must reach its own task: accept only the question
      // about the file this task's caller named.
      if (file.startsWith('conc-')) {
        const expected = await fileExpectedFor(context.taskId);
        entry.expected = expected ?? null;
        if (expected !== file) return { action: 'decline' };
      }
      entry.answeredAt = performance.now();
      return { action: 'accept', content: { confirm: true } };
    }
    entry.answer = `answer-${++answerCount}`;
    entry.answeredAt = performance.now();
    return { action: 'accept', content: { name: entry.answer } };
  },
  sampling: async () => {
    throw new Error('no sampling in this test');
  },
  roots: async () => ({ roots: [] }),
});

// ---------------------------------------------------------------------------------------
// Connections
// ---------------------------------------------------------------------------------------

const clientInfo = { name: 'mcp-tasks-rs-ext-tasks-interop', version: '0.0.0' };
const clientCapabilities = modern
  ? { elicitation: { form: {} }, extensions: { [TASKS_EXTENSION]: {} } }
  : { elicitation: { form: {} } };
const endpointId = `mcp-tasks-rs-demo:${transportName}`;
let connections = 0;

/** A connected SDK client with a task session of the library over it. */
async function connect() {
  connections += 1;
  const client = new Client(
    { ...clientInfo, name: `${clientInfo.name}-${connections}` },
    {
      capabilities: clientCapabilities,
      ...(modern ? { versionNegotiation: { mode: { pin: revision } } } : {}),
    },
  );
  const transport = newTransport();
  await bounded(client.connect(transport, { timeout: REQUEST_TIMEOUT_MS }), REQUEST_TIMEOUT_MS + 5_000, 'connect');
  const wire = new WireLog();
  const channel = new RawChannel(transport, wire);
  const conn = { client, transport, wire, channel, session: null };
  openSession(conn);
  return conn;
}

/** (Re)creates the library's task session on a connected client. */
function openSession(conn) {
  const { client, channel } = conn;
  // Recorded before the library's adapter sees them (it calls the handler it replaces).
  client.fallbackNotificationHandler = async (n) => {
    if (n.method === 'notifications/tasks/status' || n.method === 'notifications/tasks') {
      pushed.push({ method: n.method, taskId: n.params?.taskId, status: n.params?.status, meta: n.params?._meta ?? null, at: performance.now() });
    }
  };
  conn.session = createTaskSessionFromClient(client, {
    endpointId,
    onInputRequest,
    onError: (e) => backgroundErrors.push({ ...errorInfo(e), reason: e?.reason, candidates: e?.candidates }),
    ...(modern
      ? {
          rawDispatch: channel.dispatch,
          v2RequestFraming: { protocolVersion: client.getNegotiatedProtocolVersion(), clientInfo, clientCapabilities },
        }
      : {}),
  });
  return conn.session;
}

async function disconnect(conn) {
  await bounded(conn.session.close(), REQUEST_TIMEOUT_MS, 'session close').catch(() => {});
  await bounded(conn.client.close(), REQUEST_TIMEOUT_MS, 'client close').catch(() => {});
}

const callOptions = { requestTimeoutMs: REQUEST_TIMEOUT_MS };
const asTask = { ...callOptions, task: { preference: 'prefer', retentionMs: 60_000 } };

/** Calls a tool through the library and waits (bounded) for its outcome. */
async function callAndSettle(session, name, args, options = asTask) {
  const execution = await session.callTool(name, args, options);
  const settled = await bounded(execution.settle(), SETTLE_TIMEOUT_MS, `${name} settles`);
  return { execution, ...settled };
}

function outcomeSummary(outcome) {
  if (outcome?.status === 'completed') return { status: 'completed', text: text(outcome.result), isError: outcome.result?.isError ?? false };
  if (outcome?.status === 'failed') return { status: 'failed', error: errorInfo(outcome.error) };
  return { status: outcome?.status };
}

/** Polls the task's own view until it is terminal (bounded). */
async function terminalSnapshot(session, taskId) {
  const controller = session.task(taskId, { requestTimeoutMs: REQUEST_TIMEOUT_MS });
  const deadline = Date.now() + SETTLE_TIMEOUT_MS;
  for (;;) {
    const view = await controller.snapshot();
    if (['completed', 'failed', 'cancelled'].includes(view.status) || Date.now() > deadline) return view;
    await sleep(100);
  }
}

// ---------------------------------------------------------------------------------------
// Steps
// ---------------------------------------------------------------------------------------

async function main() {
  let conn = null;

  await step('connect', async (problems) => {
    conn = await connect();
    const { client, session } = conn;
    const caps = client.getServerCapabilities() ?? {};
    check(client.getNegotiatedProtocolVersion() === revision, `negotiated ${revision} (got ${client.getNegotiatedProtocolVersion()})`, problems);
    check(client.getProtocolEra() === (modern ? 'modern' : 'legacy'), `era (got ${client.getProtocolEra()})`, problems);
    check(session.capabilities.execution === true, 'the library sees task execution', problems);
    check(session.capabilities.cancellation === true, 'the library sees cancellation', problems);
    if (modern) {
      check(JSON.stringify(caps.extensions?.[TASKS_EXTENSION]) === '{}', 'capabilities.extensions tasks is {}', problems);
      check(caps.tasks === undefined, 'no legacy capabilities.tasks on 2026-07-28', problems);
      check(session.capabilities.inputResponses === true, 'the library sees tasks/update', problems);
    } else {
      check(caps.tasks?.requests?.tools?.call !== undefined, 'capabilities.tasks.requests.tools.call', problems);
      check(session.capabilities.inventory === 'server-list', `inventory server-list (got ${session.capabilities.inventory})`, problems);
    }
    return { protocolVersion: client.getNegotiatedProtocolVersion(), era: client.getProtocolEra(), capabilities: caps, library: session.capabilities };
  });
  if (conn === null) return;

  await step('greet (synchronous)', async (problems) => {
    const { execution, outcome } = await callAndSettle(conn.session, 'greet', { name: 'ext-tasks' }, callOptions);
    check(execution.kind === 'immediate', `an immediate result (got ${execution.kind})`, problems);
    const result = resultFromTaskOutcome(outcome);
    check(text(result) === 'Hello, ext-tasks!', `text (got ${text(result)})`, problems);
    return { kind: execution.kind, outcome: outcomeSummary(outcome) };
  });

  await step('slow_compute completes as a task', async (problems) => {
    const { execution, outcome, lastTask } = await callAndSettle(conn.session, 'slow_compute', { seconds: 0.5, label: 'ext' });
    check(execution.kind === 'task', `a task (got ${execution.kind})`, problems);
    check(outcome.status === 'completed', `completed (got ${outcome.status})`, problems);
    check(/^ext: done after 0\.5 s/.test(text(outcome.result)), `result text (got ${text(outcome.result)})`, problems);
    check(lastTask?.status === 'completed', `last task view completed (got ${lastTask?.status})`, problems);
    return { taskId: execution.handle?.taskId, outcome: outcomeSummary(outcome), lastTask: lastTask?.status };
  });

  await step('failing_job: tool error', async (problems) => {
    const { execution, outcome } = await callAndSettle(conn.session, 'failing_job', {}, callOptions);
    check(execution.kind === 'task', `failing_job runs as a task without being asked (got ${execution.kind})`, problems);
    if (modern) {
      // The extension: a tool error is a completed task whose result has isError.
      check(outcome.status === 'completed', `completed (got ${outcome.status})`, problems);
      check(outcome.result?.isError === true, 'result.isError', problems);
      check(/The job failed/.test(text(outcome.result)), `result text (got ${text(outcome.result)})`, problems);
    } else {
      // 2025-11-25: a tool error fails the task.
      check(outcome.status === 'failed', `failed (got ${outcome.status})`, problems);
      const view = await conn.session.task(execution.handle.taskId, callOptions).snapshot();
      check(view.status === 'failed', `tasks/get says failed (got ${view.status})`, problems);
    }
    return { taskId: execution.handle?.taskId, outcome: outcomeSummary(outcome) };
  });

  await step('confirm_delete: elicitation accepted', async (problems) => {
    const file = `notes-${revision}.txt`;
    const before = asked.length;
    const errorsBefore = backgroundErrors.length;
    const { execution, outcome } = await callAndSettle(conn.session, 'confirm_delete', { filename: file });
    const questions = asked.slice(before);
    const taskId = execution.handle?.taskId;
    check(execution.kind === 'task', `a task (got ${execution.kind})`, problems);
    check(questions.length === 1, `one question (got ${questions.length})`, problems);
    check(questions[0]?.taskId === taskId, 'the question came with its task', problems);
    check(outcome.status === 'completed', `completed (got ${outcome.status})`, problems);
    check(text(outcome.result).startsWith(`Deleted ${file}`), `result says deleted (got ${text(outcome.result)})`, problems);
    return {
      taskId,
      questions,
      outcome: outcomeSummary(outcome),
      ...(problems.length ? { wire: conn.wire.inputOrder(taskId), backgroundErrors: backgroundErrors.slice(errorsBefore) } : {}),
    };
  });

  await step('multi_input: two input rounds', async (problems) => {
    const before = asked.length;
    const { execution, outcome } = await callAndSettle(conn.session, 'multi_input', {});
    const questions = asked.slice(before);
    const answers = questions.map((q) => q.answer);
    check(questions.length === 2, `two questions (got ${questions.length})`, problems);
    check(questions.every((q) => q.taskId === execution.handle?.taskId), 'each came with its task', problems);
    check(outcome.status === 'completed', `completed (got ${outcome.status})`, problems);
    const got = text(outcome.result);
    check(answers.length === 2 && answers.every((a) => got.includes(a)), `result names both answers ${JSON.stringify(answers)} (got ${got})`, problems);
    const taskId = execution.handle?.taskId;
    return { taskId, questions, outcome: outcomeSummary(outcome), ...(problems.length ? { wire: conn.wire.inputOrder(taskId) } : {}) };
  });

  await step('cancel', async (problems) => {
    const execution = await conn.session.callTool('slow_compute', { seconds: 30, label: 'cancel-me' }, asTask);
    check(execution.kind === 'task', `a task (got ${execution.kind})`, problems);
    const taskId = execution.handle.taskId;
    await bounded(execution.cancel(), REQUEST_TIMEOUT_MS, 'cancel');
    const outcome = await bounded(execution.result(), SETTLE_TIMEOUT_MS, 'the cancelled outcome');
    check(outcome.status === 'cancelled', `outcome cancelled (got ${outcome.status})`, problems);
    const view = await terminalSnapshot(conn.session, taskId);
    check(view.status === 'cancelled', `tasks/get says cancelled (got ${view.status})`, problems);
    return { taskId, outcome: outcomeSummary(outcome), snapshot: view.status };
  });

  await step('update stream', async (problems) => {
    const file = `stream-${revision}.txt`;
    const execution = await conn.session.callTool('confirm_delete', { filename: file }, asTask);
    check(execution.kind === 'task', `a task (got ${execution.kind})`, problems);
    const events = [];
    const signal = AbortSignal.timeout(SETTLE_TIMEOUT_MS);
    for await (const event of execution.updates(signal)) {
      events.push(event.type === 'task' ? { type: 'task', status: event.task.status, keys: Object.keys(event.task.raw?.inputRequests ?? {}) } : { type: 'outcome', ...outcomeSummary(event.outcome) });
    }
    const statuses = events.filter((e) => e.type === 'task').map((e) => e.status);
    const last = events[events.length - 1];
    check(statuses[0] === 'working' || statuses[0] === 'input_required', `starts working (got ${statuses[0]})`, problems);
    check(statuses.includes('completed'), 'a completed task event', problems);
    // 2026-07-28 asks through the task (inputRequests), so the stream must show it;
    // 2025-11-25 asks on the side, answered before a poll may see input_required.
    if (modern) check(statuses.includes('input_required'), 'an input_required task event', problems);
    check(last?.type === 'outcome' && last.status === 'completed', 'ends with the completed outcome', problems);
    check((last?.text ?? '').startsWith(`Deleted ${file}`), `outcome says deleted (got ${last?.text})`, problems);
    const taskId = execution.handle.taskId;
    return { taskId, events, ...(problems.length ? { wire: conn.wire.inputOrder(taskId) } : {}) };
  });

  await step('pushed status', async (problems) => {
    if (!modern) {
      // 2025-11-25: notifications/tasks/status, unsolicited (the standalone GET stream over
      // HTTP, the connection over stdio); by now the tasks above have sent some.
      const ours = pushed.filter((n) => n.method === 'notifications/tasks/status');
      check(ours.length > 0, 'notifications/tasks/status received', problems);
      check(ours.some((n) => ['completed', 'failed', 'cancelled'].includes(n.status)), 'one says a task ended', problems);
      check(ours.every((n) => n.meta?.[RELATED_TASK] === undefined), 'none carries related-task _meta', problems);
      return { received: ours.length, statuses: [...new Set(ours.map((n) => n.status))] };
    }
    // 2026-07-28: notifications/tasks on a subscriptions/listen stream naming the task.
    const execution = await conn.session.callTool('slow_compute', { seconds: 1, label: 'pushed' }, asTask);
    const taskId = execution.handle.taskId;
    const subscription = await conn.client.listen({ taskIds: [taskId] }, { timeout: REQUEST_TIMEOUT_MS });
    // The SDK client hands back the acknowledged filter through its own schema, which has
    // no `taskIds` (it drops it): the acknowledgement as it came is checked instead.
    const ack = conn.wire.acks[conn.wire.acks.length - 1];
    check(JSON.stringify(ack?.notifications?.taskIds) === JSON.stringify([taskId]), `the acknowledgement names the task (got ${JSON.stringify(ack)})`, problems);
    const deadline = Date.now() + SETTLE_TIMEOUT_MS;
    const ended = () => pushed.find((n) => n.taskId === taskId && ['completed', 'failed', 'cancelled'].includes(n.status));
    while (!ended() && Date.now() < deadline) await sleep(50);
    const mine = pushed.filter((n) => n.taskId === taskId);
    check(ended()?.status === 'completed', `notifications/tasks says completed (got ${JSON.stringify(mine.map((n) => n.status))})`, problems);
    check(mine.every((n) => n.method === 'notifications/tasks'), 'all are notifications/tasks', problems);
    check(mine.length > 0 && mine.every((n) => n.meta?.[SUBSCRIPTION_ID] !== undefined), 'each carries the subscription id', problems);
    const { outcome } = await bounded(execution.settle(), SETTLE_TIMEOUT_MS, 'slow_compute settles');
    check(outcome.status === 'completed', `the execution completed (got ${outcome.status})`, problems);
    await bounded(subscription.close(), REQUEST_TIMEOUT_MS, 'closing the subscription').catch(() => {});
    return { taskId, acknowledged: ack ?? null, sdkHonoredFilter: subscription.honoredFilter, notifications: mine };
  });

  if (!modern) {
    // 2025-11-25: every status change is pushed as soon as it is written, before the
    // library's first poll (its pollInterval after the CreateTaskResult) and within one
    // poll interval of the answer that led to it; a client that stops listening once it
    // has its result has heard them all.
    await step('statuses pushed before the first poll', async (problems) => {
      const mine = (taskId) => pushed.filter((n) => n.taskId === taskId && n.method === 'notifications/tasks/status');
      const statusesOf = (taskId) => mine(taskId).map((n) => n.status);
      const firstPoll = (taskId) => conn.wire.entries.find((e) => e.dir === 'out' && e.method === 'tasks/get' && e.taskId === taskId);
      const settleAndListen = async (execution) => {
        const settled = await bounded(execution.settle(), SETTLE_TIMEOUT_MS, 'the task settles');
        // What a client that closes its stream right after the result would have heard.
        await sleep(300);
        return settled;
      };

      const computing = await conn.session.callTool('slow_compute', { seconds: 0.2, label: 'push' }, asTask);
      const created = performance.now();
      const pollMs = conn.wire.entries.find((e) => e.created === computing.handle.taskId)?.pollInterval ?? 1000;
      const computed = await settleAndListen(computing);
      const computeId = computing.handle.taskId;
      check(computed.outcome.status === 'completed', `slow_compute completed (got ${computed.outcome.status})`, problems);
      check(JSON.stringify(statusesOf(computeId)) === JSON.stringify(['working', 'completed']), `slow_compute: working, completed pushed (got ${JSON.stringify(statusesOf(computeId))})`, problems);
      for (const n of mine(computeId)) {
        check(n.at - created < pollMs, `slow_compute: ${n.status} pushed ${Math.round(n.at - created)} ms after the CreateTaskResult, before the first poll (${pollMs} ms)`, problems);
      }

      const file = `push-${revision}.txt`;
      const asking = await conn.session.callTool('confirm_delete', { filename: file }, asTask);
      const askedAt = performance.now();
      const answered = await settleAndListen(asking);
      const askId = asking.handle.taskId;
      check(answered.outcome.status === 'completed', `confirm_delete completed (got ${answered.outcome.status})`, problems);
      const statuses = statusesOf(askId);
      check(statuses[0] === 'input_required', `confirm_delete: input_required pushed first (got ${JSON.stringify(statuses)})`, problems);
      check(statuses[statuses.length - 1] === 'completed', `confirm_delete: completed pushed last (got ${JSON.stringify(statuses)})`, problems);
      check(new Set(statuses).size === statuses.length, `confirm_delete: each status once (got ${JSON.stringify(statuses)})`, problems);
      const question = mine(askId).find((n) => n.status === 'input_required');
      check(question !== undefined && question.at - askedAt < pollMs, `confirm_delete: input_required pushed ${question ? Math.round(question.at - askedAt) : '-'} ms after the CreateTaskResult, before the first poll (${pollMs} ms)`, problems);
      const answer = [...asked].reverse().find((a) => a.message === `Delete ${file}?`);
      const done = mine(askId).find((n) => n.status === 'completed');
      check(answer?.answeredAt !== undefined && done !== undefined && done.at - answer.answeredAt < pollMs, `confirm_delete: completed pushed ${done && answer?.answeredAt ? Math.round(done.at - answer.answeredAt) : '-'} ms after the answer, within a poll interval (${pollMs} ms)`, problems);
      const poll = firstPoll(computeId);
      return {
        pollIntervalMs: pollMs,
        slowCompute: { taskId: computeId, pushed: mine(computeId).map((n) => ({ status: n.status, ms: Math.round(n.at - created) })), firstPollMs: poll ? Math.round(poll.t - created) : null },
        confirmDelete: { taskId: askId, pushed: mine(askId).map((n) => ({ status: n.status, ms: Math.round(n.at - askedAt) })) },
      };
    });
  }

  await step('hand-off to a new client, resumed there', async (problems) => {
    const execution = await conn.session.callTool('slow_compute', { seconds: 1.5, label: 'handed-off' }, asTask);
    check(execution.kind === 'task', `a task (got ${execution.kind})`, problems);
    let stored = null;
    await execution.handoff((reference) => {
      stored = JSON.stringify(reference);
    });
    const reference = JSON.parse(stored);
    check(reference.generation === generation, `generation ${generation} (got ${reference.generation})`, problems);
    check(reference.taskId === execution.handle.taskId, 'the reference names the task', problems);
    // Handed off: the local execution ends (closed) without touching the task. Waited
    // for, since closing a session cancels the executions it still holds unsettled.
    const local = await bounded(execution.result(), REQUEST_TIMEOUT_MS, 'the handed-off execution ends locally');
    let resumedBy;
    if (transportName === 'streamable-http') {
      // A second client and connection (another session on 2025-11-25, the same bearer).
      const other = await connect();
      resumedBy = 'a new client';
      try {
        const resumed = await other.session.resumeTask(reference, callOptions);
        const { outcome } = await bounded(resumed.settle(), SETTLE_TIMEOUT_MS, 'the resumed task settles');
        check(outcome.status === 'completed', `completed (got ${outcome.status})`, problems);
        check(/^handed-off: done after 1\.5 s/.test(text(outcome.result)), `result text (got ${text(outcome.result)})`, problems);
        return { reference, local: outcomeSummary(local), resumedBy, outcome: outcomeSummary(outcome) };
      } finally {
        await disconnect(other);
      }
    }
    // stdio: a second client would be a second server process, which has none of this
    // one's tasks; the reference goes to a new task session of the library instead.
    await bounded(conn.session.close(), REQUEST_TIMEOUT_MS, 'closing the first session');
    const session = openSession(conn);
    resumedBy = 'a new task session on the same connection';
    const resumed = await session.resumeTask(reference, callOptions);
    const { outcome } = await bounded(resumed.settle(), SETTLE_TIMEOUT_MS, 'the resumed task settles');
    check(outcome.status === 'completed', `completed (got ${outcome.status})`, problems);
    check(/^handed-off: done after 1\.5 s/.test(text(outcome.result)), `result text (got ${text(outcome.result)})`, problems);
    return { reference, local: outcomeSummary(local), resumedBy, outcome: outcomeSummary(outcome) };
  });

  for (let round = 1; round <= CONCURRENCY_ROUNDS; round++) {
    await step(`${CONCURRENT_TASKS} confirm_delete ${AT_A_TIME} at a time (round ${round}/${CONCURRENCY_ROUNDS})`, async (problems) => {
      const files = Array.from({ length: CONCURRENT_TASKS }, (_, i) => `conc-${revision}-r${round}-${i + 1}.txt`);
      const errorsBefore = backgroundErrors.length;
      const runs = [];
      for (let start = 0; start < files.length; start += AT_A_TIME) {
        const batch = files.slice(start, start + AT_A_TIME).map(async (file) => {
          const run = { file };
          try {
            const execution = await conn.session.callTool('confirm_delete', { filename: file }, asTask);
            run.taskId = execution.handle?.taskId;
            if (run.taskId !== undefined) expectFile(run.taskId, file);
            const { outcome } = await bounded(execution.settle(), SETTLE_TIMEOUT_MS, `${file} settles`);
            Object.assign(run, outcomeSummary(outcome));
          } catch (e) {
            run.exception = errorInfo(e);
          }
          return run;
        });
        runs.push(...(await Promise.all(batch)));
      }
      const failures = runs.filter((r) => r.status !== 'completed' || !(r.text ?? '').startsWith(`Deleted ${r.file}`));
      for (const r of failures) problems.push(`${r.file}: ${r.exception ? JSON.stringify(r.exception) : r.text ?? r.status}`);
      const errors = backgroundErrors.slice(errorsBefore);
      return {
        completed: runs.length - failures.length,
        failures: failures.map((r) => ({
          ...r,
          questions: asked.filter((q) => q.taskId === r.taskId),
          // The frames about this task on this connection, in the order they came.
          wire: conn.wire.inputOrder(r.taskId),
        })),
        backgroundErrors: { count: errors.length, reasons: [...new Set(errors.map((e) => e.reason ?? e.message))] },
      };
    });
  }

  await disconnect(conn);
}

main().then(
  () => finish(0),
  (e) => {
    steps.push({ step: 'run', ok: false, details: { exception: errorInfo(e), stack: e?.stack?.split('\n').slice(0, 5) } });
    finish(1);
  },
);
