// plan.mjs is what the agent-framework scripts share: the plan the Go tests write, and the checks they report.
//
// A plan: {"http": {"url", "headers"}} or {"stdio": {"command", "args", "env"}}: how to reach GEM's MCP server;
// "model": {"base_url", "api_key", "name"}: an OpenAI-compatible chat completions API (the tests' scripted
// fake); "prompt": what the user asks the agent.
import { readFileSync } from 'node:fs';

export const plan = JSON.parse(readFileSync(process.argv[2], 'utf8'));

// functionNameRe is what OpenAI and Anthropic accept as a function name.
export const functionNameRe = /^[a-zA-Z0-9_-]{1,64}$/;

// print writes the script's one JSON answer.
export function print(out) {
  process.stdout.write(JSON.stringify(out) + '\n');
}

// errorText is an error's message, for the report.
export function errorText(err) {
  return String(err?.stack ?? err?.message ?? err);
}
