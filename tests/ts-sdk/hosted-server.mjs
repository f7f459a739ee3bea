// An official TypeScript SDK server (@modelcontextprotocol/sdk, pinned in package.json)
// that asks its client for input as tasks of the client (MCP 2025-11-25, SEP-1686, the
// client as receiver), through the SDK's experimental tasks API. Our client connects to
// it; its tools report what the SDK saw.
//
//   node hosted-server.mjs --stdio
//   node hosted-server.mjs --http      (prints "listening http://127.0.0.1:PORT/mcp")
//
// Tools:
// - ask_both: a task-based elicitation (form, ttl 60000) and a task-based sampling
//   request, each followed by the SDK to its result; then tasks/list (its error, from a
//   client without tasks) and tasks/get of both. Returns one JSON text:
//   {elicitation, sampling, listed, got}.
// - cancel_one: a task-based elicitation whose message is "hold" (the client's handler
//   never answers it), cancelled with tasks/cancel once created; then tasks/get and
//   tasks/cancel again. Returns {created, cancelled, got, again}.
// Every request has a timeout.

import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const REQUEST_TIMEOUT_MS = 20_000;

const server = new Server(
  { name: 'ts-hosted-server', version: '1.0.0' },
  { capabilities: { tools: {} } },
);

const form = (message) => ({
  mode: 'form',
  message,
  requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
});

/** Drains a request stream: the task it created, the statuses seen, the result or error. */
async function follow(stream) {
  const out = { created: null, statuses: [], result: null, error: null };
  for await (const m of stream) {
    if (m.type === 'taskCreated') out.created = m.task;
    else if (m.type === 'taskStatus') out.statuses.push(m.task.status);
    else if (m.type === 'result') out.result = m.result;
    else if (m.type === 'error') out.error = { code: m.error.code, message: m.error.message };
  }
  return out;
}

function errorInfo(e) {
  return { code: e?.code, message: e?.message ?? String(e) };
}

async function askBoth(extra) {
  const opts = { timeout: REQUEST_TIMEOUT_MS, relatedRequestId: extra.requestId };
  const tasks = server.experimental.tasks;
  const elicitation = await follow(
    tasks.elicitInputStream(form('Your name?'), { ...opts, task: { ttl: 60_000 } }),
  );
  const sampling = await follow(
    tasks.createMessageStream(
      { messages: [{ role: 'user', content: { type: 'text', text: 'The answer?' } }], maxTokens: 10 },
      { ...opts, task: {} },
    ),
  );
  // A client without tasks has no tasks/list: reported, not thrown.
  const listed = await tasks.listTasks(undefined, opts).catch((e) => ({ error: errorInfo(e) }));
  const got = [];
  for (const id of [elicitation.created?.taskId, sampling.created?.taskId]) {
    if (id) got.push(await tasks.getTask(id, opts));
  }
  return { elicitation, sampling, listed, got };
}

async function cancelOne(extra) {
  const opts = { timeout: REQUEST_TIMEOUT_MS, relatedRequestId: extra.requestId };
  const tasks = server.experimental.tasks;
  const out = { created: null, cancelled: null, got: null, again: null };
  for await (const m of tasks.elicitInputStream(form('hold'), { ...opts, task: {} })) {
    if (m.type === 'taskCreated') {
      out.created = m.task;
      break;
    }
    if (m.type === 'error') throw m.error;
  }
  if (!out.created) throw new Error('no task was created');
  out.cancelled = await tasks.cancelTask(out.created.taskId, opts);
  out.got = await tasks.getTask(out.created.taskId, opts);
  try {
    out.again = { result: await tasks.cancelTask(out.created.taskId, opts) };
  } catch (e) {
    out.again = { error: errorInfo(e) };
  }
  return out;
}

server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    { name: 'ask_both', inputSchema: { type: 'object' } },
    { name: 'cancel_one', inputSchema: { type: 'object' } },
  ],
}));

server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
  try {
    const run = { ask_both: askBoth, cancel_one: cancelOne }[request.params.name];
    if (!run) throw new Error(`unknown tool ${request.params.name}`);
    const report = await run(extra);
    return { content: [{ type: 'text', text: JSON.stringify(report) }] };
  } catch (e) {
    return { content: [{ type: 'text', text: JSON.stringify({ failed: errorInfo(e) }) }], isError: true };
  }
});

const mode = process.argv[2];
if (mode === '--stdio') {
  await server.connect(new StdioServerTransport());
} else if (mode === '--http') {
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID() });
  await server.connect(transport);
  const http = createServer(async (req, res) => {
    if (new URL(req.url, 'http://127.0.0.1').pathname !== '/mcp') {
      res.writeHead(404).end();
      return;
    }
    let body;
    if (req.method === 'POST') {
      const chunks = [];
      for await (const chunk of req) chunks.push(chunk);
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        res.writeHead(400).end();
        return;
      }
    }
    await transport.handleRequest(req, res, body);
  });
  http.listen(0, '127.0.0.1', () => {
    console.log(`listening http://127.0.0.1:${http.address().port}/mcp`);
  });
} else {
  console.error('usage: hosted-server.mjs (--stdio | --http)');
  process.exit(64);
}
