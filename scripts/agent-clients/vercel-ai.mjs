// vercel-ai drives GEM's MCP server with the Vercel AI SDK (ai, with @ai-sdk/mcp's MCP client), as an agent
// built on it does:
//
//   node vercel-ai.mjs PLAN.json     (the plan: plan.mjs)
//
// It lists GEM's tools with the MCP client (client.tools(): the names it hands the model are the names the
// server lists), then runs generateText on the plan's prompt with the model at the plan's chat completions
// API (@ai-sdk/openai-compatible) and those tools, for up to 6 steps: the SDK calls the tools the model asks
// for over MCP and hands the answers back.
//
// It prints {"tools": [{"name"}], "final_text", "tool_outputs": [...], "threw"}; it exits 0 when it could
// connect and list.
import { generateText, stepCountIs } from 'ai';
import { createMCPClient } from '@ai-sdk/mcp';
import { Experimental_StdioMCPTransport } from '@ai-sdk/mcp/mcp-stdio';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { errorText, plan, print } from './plan.mjs';

const client = await createMCPClient({
  transport: plan.http
    ? { type: 'http', url: plan.http.url, headers: plan.http.headers ?? {} }
    : new Experimental_StdioMCPTransport({ command: plan.stdio.command, args: plan.stdio.args ?? [], env: plan.stdio.env }),
});
const out = { tools: [], final_text: null, tool_outputs: [], threw: null };
try {
  const tools = await client.tools();
  out.tools = Object.keys(tools).map((name) => ({ name }));
  if (plan.model) {
    const provider = createOpenAICompatible({ name: 'fake', baseURL: plan.model.base_url, apiKey: plan.model.api_key });
    try {
      const result = await generateText({ model: provider.chatModel(plan.model.name), tools, prompt: plan.prompt, stopWhen: stepCountIs(6) });
      out.final_text = result.text;
      for (const step of result.steps) {
        for (const part of step.content) {
          if (part.type === 'tool-result' || part.type === 'tool-error') {
            out.tool_outputs.push({ name: part.toolName, output: JSON.stringify(part.output ?? part.error) });
          }
        }
      }
    } catch (err) {
      out.threw = errorText(err);
    }
  }
} finally {
  await client.close();
}
print(out);
