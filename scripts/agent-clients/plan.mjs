// plan.mjs is what the agent-framework scripts share: the plan the Go tests write, and the checks they report.
//
// A plan: {"http": {"url", "headers"}} or {"stdio": {"command", "args", "env"}}: how to reach GEM's MCP server;
// "model": {"base_url", "api_key", "name"}: an OpenAI-compatible chat completions API (the tests' scripted
// fake); "prompt": what the user asks the agent.
import { readFileSync } from 'node:fs';

export const plan = JSON.parse(readFileSync(process.argv[2], 'utf8'));

// functionNameRe is what OpenAI and Anthropic accept as a function name.
export const functionNameRe = /^[a-zA-Z0-9_-]{1,64}$/;

// schemaWords lists the keywords a JSON schema uses (at schema positions only: property names are data) and
// its formats, each once, sorted.
export function schemaWords(schema) {
  const keywords = new Set();
  const formats = new Set();
  const walk = (node) => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (!node || typeof node !== 'object') return;
    for (const [k, v] of Object.entries(node)) {
      keywords.add(k);
      if (k === 'format' && typeof v === 'string') formats.add(v);
      if (k === 'properties' || k === '$defs' || k === 'definitions') Object.values(v ?? {}).forEach(walk);
      else if (['items', 'anyOf', 'oneOf', 'allOf', 'not', 'additionalProperties', 'if', 'then', 'else'].includes(k)) walk(v);
    }
  };
  walk(schema);
  return { keywords: [...keywords].sort(), formats: [...formats].sort() };
}

// print writes the script's one JSON answer.
export function print(out) {
  process.stdout.write(JSON.stringify(out) + '\n');
}

// errorText is an error's message, for the report.
export function errorText(err) {
  return String(err?.stack ?? err?.message ?? err);
}
