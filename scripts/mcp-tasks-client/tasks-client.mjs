// tasks-client drives an MCP server with the official MCP tasks requester (@modelcontextprotocol/ext-tasks,
// the io.modelcontextprotocol/tasks extension of SEP-2663) on the official TypeScript SDK v2 client, as an
// agent host that speaks tasks would: it connects (server/discover, protocol revision 2026-07-28), makes each
// call through a task session, and follows the tasks it gets to their end.
//
//   node tasks-client.mjs PLAN.json     drive a server (HTTP)
//   node tasks-client.mjs --validate    check messages against the package's own wire schemas
//
// The plan: {"url", "token", "calls": [{"name", "arguments", "input", "hold", "cancel"}]}. For each call it
// prints one JSON line as tools/call answers, {"event": "started", "index", "kind": "task" | "immediate",
// "taskId"}; with "hold" it then waits for a line on stdin (the test's go-ahead) before following the task;
// with "cancel" it cancels the task (tasks/cancel). An input request the task carries is printed as
// {"event": "input", "index", "request"} and answered with "input" (an elicitation's answer; none: the
// package's default, cancel). Last {"event": "settled", "index", "outcome", "lastTask"}, or {"event":
// "threw", "index", "error"}. The package validates every answer it reads with its schemas and throws when
// one does not match.
//
// --validate reads lines {"schema": "<an export of @modelcontextprotocol/ext-tasks/core/v2>", "value"} and
// prints {"schema", "ok", "issues"} for each.
//
// rawDispatch is the host's part of the package's contract for a 2026-07-28 server: it posts the framed
// request with the headers SEP-2243 and SEP-2663 ask for (MCP-Protocol-Version, Mcp-Method, and Mcp-Name:
// the tool's name for tools/call, the taskId for tasks/*).
import { createInterface } from 'node:readline';
import { readFileSync } from 'node:fs';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createTaskSessionFromClient, resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';
import * as v2 from '@modelcontextprotocol/ext-tasks/core/v2';

const revision = '2026-07-28';
const print = (line) => process.stdout.write(JSON.stringify(line) + '\n');
const stdin = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

if (process.argv[2] === '--validate') {
  for (;;) {
    const { value: line, done } = await stdin.next();
    if (done) break;
    if (!line.trim()) continue;
    const { schema, value } = JSON.parse(line);
    if (!v2[schema]?.safeParse) {
      print({ schema, ok: false, issues: [`no schema ${schema} in @modelcontextprotocol/ext-tasks/core/v2`] });
      continue;
    }
    const parsed = v2[schema].safeParse(value);
    print({ schema, ok: parsed.success, issues: parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('/')}: ${i.message}`) });
  }
  process.exit(0);
}

const plan = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const auth = { Authorization: `Bearer ${plan.token}` };
const client = new Client({ name: 'gem-tasks-client', version: '1' }, { versionNegotiation: { mode: { pin: revision } } });
await client.connect(new StreamableHTTPClientTransport(new URL(plan.url), { requestInit: { headers: auth } }));

let ids = 0;
async function rawDispatch(request, options = {}) {
  const id = `tasks-client-${++ids}`;
  const method = request.method;
  const name = method === 'tools/call' ? request.params?.name : request.params?.taskId;
  const res = await fetch(plan.url, {
    method: 'POST',
    signal: options.signal,
    headers: {
      ...auth,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': revision,
      'Mcp-Method': method,
      ...(typeof name === 'string' ? { 'Mcp-Name': name } : {}),
      ...(options.context?.headers ?? {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id, ...request }),
  });
  const text = await res.text();
  const messages = (res.headers.get('content-type') ?? '').startsWith('text/event-stream')
    ? text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)))
    : [JSON.parse(text)];
  const answer = messages.find((m) => m.id === id);
  if (!answer) throw new Error(`no answer to ${method} (HTTP ${res.status}): ${text}`);
  return answer.error ? { kind: 'error', error: answer.error } : { kind: 'result', result: answer.result };
}

const inputs = new Map(); // call index → the answer its input requests get
let current = -1;
const session = createTaskSessionFromClient(client, {
  endpointId: plan.url,
  rawDispatch,
  v2RequestFraming: { protocolVersion: revision, clientInfo: { name: 'gem-tasks-client', version: '1' }, clientCapabilities: {} },
  onInputRequest: async (request, context) => {
    const index = current;
    print({ event: 'input', index, request, taskId: context.taskId ?? null, inputId: context.inputId ?? null });
    const answer = inputs.get(index);
    return answer ?? { action: 'cancel' };
  },
  onError: (err) => print({ event: 'error', index: current, error: String(err?.message ?? err) }),
});

for (const [index, call] of (plan.calls ?? []).entries()) {
  current = index;
  if (call.input) inputs.set(index, call.input);
  try {
    const execution = await session.callTool(call.name, call.arguments ?? {}, { requestTimeoutMs: 120000 });
    print({ event: 'started', index, kind: execution.kind, taskId: execution.handle?.taskId ?? null });
    if (call.hold) await stdin.next();
    if (call.cancel) await execution.cancel();
    const { outcome, lastTask } = await execution.settle();
    let result = null;
    let error = null;
    try {
      result = outcome.status === 'completed' ? resultFromTaskOutcome(outcome) : null;
    } catch (err) {
      error = String(err?.message ?? err);
    }
    print({ event: 'settled', index, outcome: { status: outcome.status, result, error: error ?? (outcome.error ? String(outcome.error.message) : null) },
      lastTask: lastTask ? { status: lastTask.status, statusMessage: lastTask.statusMessage ?? null, raw: lastTask.raw } : null });
  } catch (err) {
    print({ event: 'threw', index, error: String(err?.stack ?? err) });
  }
}
await session.close();
await client.close();
process.exit(0);
