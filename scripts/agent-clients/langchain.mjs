// langchain drives GEM's MCP server with LangChain.js's MCP adapters (@langchain/mcp-adapters), as an agent
// built on LangChain does:
//
//   node langchain.mjs PLAN.json     (the plan: plan.mjs)
//
// It loads GEM's tools with MultiServerMCPClient (the names it binds to the model are the names the server
// lists), then runs LangGraph's prebuilt ReAct agent on the plan's prompt with ChatOpenAI at the plan's chat
// completions API: the agent calls the tools the model asks for over MCP and hands the answers back.
//
// It prints {"tools": [{"name"}], "final_text", "tool_outputs": [...], "threw"}; it exits 0 when it could
// connect and list.
import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import { ChatOpenAI } from '@langchain/openai';
import { createReactAgent } from '@langchain/langgraph/prebuilt';
import { errorText, plan, print } from './plan.mjs';

const client = new MultiServerMCPClient({
  throwOnLoadError: true,
  prefixToolNameWithServerName: false,
  mcpServers: {
    gem: plan.http
      ? { transport: 'http', url: plan.http.url, headers: plan.http.headers ?? {} }
      : { transport: 'stdio', command: plan.stdio.command, args: plan.stdio.args ?? [], env: plan.stdio.env },
  },
});
const out = { tools: [], final_text: null, tool_outputs: [], threw: null };
try {
  const tools = await client.getTools();
  out.tools = tools.map((t) => ({ name: t.name }));
  if (plan.model) {
    const model = new ChatOpenAI({ model: plan.model.name, apiKey: plan.model.api_key, configuration: { baseURL: plan.model.base_url }, maxRetries: 0 });
    try {
      const agent = createReactAgent({ llm: model, tools });
      const state = await agent.invoke({ messages: [{ role: 'user', content: plan.prompt }] }, { recursionLimit: 12 });
      for (const m of state.messages) {
        if (m.getType() === 'tool') out.tool_outputs.push({ name: m.name ?? null, output: typeof m.content === 'string' ? m.content : JSON.stringify(m.content) });
      }
      const last = state.messages.at(-1);
      out.final_text = typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content);
    } catch (err) {
      out.threw = errorText(err);
    }
  }
} finally {
  await client.close();
}
print(out);
