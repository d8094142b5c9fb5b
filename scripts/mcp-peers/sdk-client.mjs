// sdk-client drives an MCP server with the official MCP TypeScript SDK's Client, as agent frameworks built
// on it do: it lists the tools (the SDK then checks every answer's structuredContent against the tool's
// outputSchema, and throws when it does not match) and makes the calls a plan names, one after another.
//
//   node sdk-client.mjs PLAN.json
//
// The plan: {"http": {"url", "headers"}} or {"stdio": {"command", "args", "env"}}, and "calls": [{"name",
// "arguments", "meta"}]. An argument value "$call_id:N" is the call the Nth call (from 0) made (its _meta's
// gem/call_id, or its structured call_id).
// It prints one JSON object: {"tools": [{"name", "title", "meta", "outputSchema"}], "list_bytes": the tools/list result's size,
// "results": [{"name", "result"} or {"name", "threw"}]}. It exits 0 when it could connect and list.
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const plan = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const transport = plan.http
  ? new StreamableHTTPClientTransport(new URL(plan.http.url), { requestInit: { headers: plan.http.headers ?? {} } })
  : new StdioClientTransport({ command: plan.stdio.command, args: plan.stdio.args ?? [], env: plan.stdio.env, stderr: 'inherit' });
const client = new Client({ name: 'gem-sdk-client', version: '1' });
await client.connect(transport);

const listed = await client.listTools();
const out = {
  tools: listed.tools.map((t) => ({ name: t.name, title: t.title, meta: t._meta ?? null, outputSchema: t.outputSchema ?? null })),
  list_bytes: Buffer.byteLength(JSON.stringify(listed)),
  results: [],
};

const resolve = (value) => {
  if (typeof value === 'string' && value.startsWith('$call_id:')) {
    const earlier = out.results[Number(value.slice('$call_id:'.length))];
    return earlier?.result?._meta?.['gem/call_id'] ?? earlier?.result?.structuredContent?.call_id ?? value;
  }
  if (Array.isArray(value)) return value.map(resolve);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve(v)]));
  return value;
};

for (const call of plan.calls ?? []) {
  const params = { name: call.name, arguments: resolve(call.arguments ?? {}) };
  if (call.meta) params._meta = call.meta;
  try {
    out.results.push({ name: call.name, result: await client.callTool(params, undefined, { timeout: 120000 }) });
  } catch (err) {
    out.results.push({ name: call.name, threw: String(err?.message ?? err) });
  }
}
await client.close();
process.stdout.write(JSON.stringify(out) + '\n');
