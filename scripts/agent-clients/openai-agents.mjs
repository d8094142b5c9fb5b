// openai-agents drives GEM's MCP server with the OpenAI Agents SDK for JavaScript (@openai/agents), as an
// agent built on it does:
//
//   node openai-agents.mjs PLAN.json     (the plan: plan.mjs)
//
// 1. It lists GEM's tools through the SDK's MCP server support and converts every one the way an agent with
//    mcpConfig.convertSchemasToStrict does (the SDK's own getAllMcpTools), reporting per tool whether the
//    strict copy held (the SDK falls back to a non-strict tool, silently, when it cannot convert), the schema
//    it would send the model, and, for a fallback, the SDK's reason.
// 2. It runs an agent on the plan's prompt with the model at the plan's chat completions API: the SDK sends
//    GEM's tools to the model, calls the ones the model asks for over MCP and hands the answers back.
//
// It prints {"tools": [{"name", "strict", "parameters", "reason"}], "final_text", "tool_outputs":
// [...], "threw"}; it exits 0 when it could connect and list.
import { Agent, MCPServerStdio, MCPServerStreamableHttp, OpenAIProvider, Runner, getAllMcpTools, setTracingDisabled } from '@openai/agents';
import { errorText, plan, print } from './plan.mjs';

// The SDK's check behind a strict fallback is not exported; it is read from its file (the version is pinned
// by package-lock.json) only to say why a tool fell back.
const { assertOpenAIStrictToolSchemaPreservesOpenObjects } = await import(
  new URL('./node_modules/@openai/agents-core/dist/utils/strictToolSchema.mjs', import.meta.url));

setTracingDisabled(true); // the SDK would send traces to OpenAI

const server = plan.http
  ? new MCPServerStreamableHttp({ name: 'gem', url: plan.http.url, requestInit: { headers: plan.http.headers ?? {} }, timeout: 120000 })
  : new MCPServerStdio({ name: 'gem', command: plan.stdio.command, args: plan.stdio.args ?? [], env: plan.stdio.env, timeout: 120000 });
await server.connect();

const out = { tools: [], final_text: null, tool_outputs: [], threw: null };
try {
  const listed = await server.listTools();
  const converted = await getAllMcpTools({ mcpServers: [server], convertSchemasToStrict: true });
  const byName = new Map(listed.map((t) => [t.name, t]));
  for (const tool of converted) {
    let reason = null;
    if (!tool.strict) {
      try {
        const input = byName.get(tool.name)?.inputSchema ?? {};
        assertOpenAIStrictToolSchemaPreservesOpenObjects({ ...input, type: input.type ?? 'object', properties: input.properties ?? {}, required: input.required ?? [] });
        reason = 'the SDK refused the converted schema';
      } catch (err) {
        reason = err.message;
      }
    }
    out.tools.push({ name: tool.name, strict: tool.strict, parameters: tool.parameters, reason });
  }

  if (plan.model) {
    const agent = new Agent({
      name: 'gem-agent',
      instructions: 'You run GEM tools for the user.',
      model: plan.model.name,
      mcpServers: [server],
      mcpConfig: { convertSchemasToStrict: true },
    });
    const runner = new Runner({
      modelProvider: new OpenAIProvider({ apiKey: plan.model.api_key, baseURL: plan.model.base_url, useResponses: false }),
      tracingDisabled: true,
    });
    try {
      const result = await runner.run(agent, plan.prompt, { maxTurns: 6 });
      out.final_text = result.finalOutput ?? null;
      for (const item of result.newItems) {
        if (item.type === 'tool_call_output_item') {
          out.tool_outputs.push({ name: item.rawItem?.name ?? null, output: typeof item.output === 'string' ? item.output : JSON.stringify(item.output) });
        }
      }
    } catch (err) {
      out.threw = errorText(err);
    }
  }
} finally {
  await server.close();
}
print(out);
